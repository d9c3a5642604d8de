# al_embed(OUT IN NAME): a build step that writes file IN into the C
# source OUT as the array NAME and its length NAME_len (cmake/embed.cmake
# does the writing), rebuilt when IN or embed.cmake changes. For the files
# a binary carries instead of installing: the agent's zygote.py and
# check.py, the sandbox's QEMU preload shim.
function(al_embed out in name)
  add_custom_command(OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DIN=${in} -DOUT=${out} -DNAME=${name}
            -P ${PROJECT_SOURCE_DIR}/cmake/embed.cmake
    DEPENDS ${in} ${PROJECT_SOURCE_DIR}/cmake/embed.cmake VERBATIM)
endfunction()
