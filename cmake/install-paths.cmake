# install-paths.cmake: run by `cmake --install` (install(CODE) in
# tools/CMakeLists.txt), where CMAKE_INSTALL_PREFIX is the prefix of this
# install, --prefix DIR included. Installs the default config and the
# systemd unit whose ExecStart runs PREFIX/bin/airlock with that config,
# the same file the installed CLI reads (al_config_system_path in
# tools/config/config.c computes it the same way).
#
# In: AL_SRC, AL_OUT (tools/ build dir), AL_REL_BINDIR, AL_REL_SYSCONFDIR,
# AL_REL_DOCDIR (GNUInstallDirs values, relative unless the build set an
# absolute one).

function(al_full_dir rel ret)
  if(IS_ABSOLUTE "${rel}")
    set(${ret} "${rel}" PARENT_SCOPE)
  else()
    set(${ret} "${CMAKE_INSTALL_PREFIX}/${rel}" PARENT_SCOPE)
  endif()
endfunction()

al_full_dir("${AL_REL_BINDIR}" AL_BINDIR)
al_full_dir("${AL_REL_DOCDIR}" AL_DOCDIR)
if(IS_ABSOLUTE "${AL_REL_SYSCONFDIR}")
  set(AL_SYSCONFDIR "${AL_REL_SYSCONFDIR}")
elseif(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(AL_SYSCONFDIR "/etc") # GNUInstallDirs' FHS rule, as the binary
else()
  set(AL_SYSCONFDIR "${CMAKE_INSTALL_PREFIX}/${AL_REL_SYSCONFDIR}")
endif()

file(INSTALL DESTINATION "${AL_SYSCONFDIR}/airlock"
     TYPE FILE FILES "${AL_SRC}/configs/airlock.conf")
configure_file("${AL_SRC}/configs/airlock.service.in"
               "${AL_OUT}/airlock.service" @ONLY)
file(INSTALL DESTINATION "${CMAKE_INSTALL_PREFIX}/lib/systemd/system"
     TYPE FILE FILES "${AL_OUT}/airlock.service")
