# dwsr_loaded_library(OUT PATH): the file a program should dlopen for the
# library found at PATH: its versioned name (libx.so -> libx.so.N, which the
# runtime package installs without the development one), or PATH itself.
# For the libraries dwsr loads at their first use instead of linking them.
function(dwsr_loaded_library out path)
  set(result ${path})
  if(IS_SYMLINK ${path})
    file(READ_SYMLINK ${path} link)
    if(NOT IS_ABSOLUTE ${link})
      get_filename_component(dir ${path} DIRECTORY)
      set(link ${dir}/${link})
    endif()
    set(result ${link})
  endif()
  set(${out} ${result} PARENT_SCOPE)
endfunction()
