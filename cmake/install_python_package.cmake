# Run by `cmake --install` (install(SCRIPT) in python/CMakeLists.txt, after install(CODE) set
# redbloom_python, redbloom_python_system_dir, redbloom_python_extension (the built _redbloom)
# and redbloom_python_files (the .py files)). The prefix is known only now (--prefix overrides
# the configured one), so the package's directory is chosen here:
#   - the prefix is the interpreter's user base (~/.local, or $PYTHONUSERBASE): its user
#     site-packages, which it reads for this user (lib/python3.X/site-packages);
#   - any other prefix: redbloom_python_system_dir under it, the directory Debian's python3
#     reads for /usr/local (lib/python3.X/dist-packages); for another prefix the message says
#     to set PYTHONPATH.
execute_process(
  COMMAND "${redbloom_python}" -c
    "import site; print(site.getuserbase()); print(site.getusersitepackages()); print('\\n'.join(site.getsitepackages()))"
  OUTPUT_VARIABLE paths RESULT_VARIABLE status ERROR_VARIABLE error
  OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "redbloom: cannot ask ${redbloom_python} where it reads packages "
                      "(${error}); the Python package is not installed. Check that this "
                      "interpreter runs, or configure with -DPython_EXECUTABLE=/usr/bin/python3.")
endif()
string(REPLACE "\n" ";" paths "${paths}")
list(POP_FRONT paths user_base user_site)  # the rest: the interpreter's site directories

file(REAL_PATH "${CMAKE_INSTALL_PREFIX}" prefix)
file(REAL_PATH "${user_base}" user_base)
if(prefix STREQUAL user_base)
  file(RELATIVE_PATH package_dir "${user_base}" "${user_site}")
  set(reads TRUE)
else()
  set(package_dir "${redbloom_python_system_dir}")
  set(reads FALSE)
  foreach(site_dir IN LISTS paths)
    file(REAL_PATH "${site_dir}" site_dir)
    if(site_dir STREQUAL "${prefix}/${package_dir}")
      set(reads TRUE)
    endif()
  endforeach()
endif()

set(destination "${CMAKE_INSTALL_PREFIX}/${package_dir}/redbloom")
file(INSTALL DESTINATION "${destination}" TYPE MODULE FILES "${redbloom_python_extension}")
if(CMAKE_INSTALL_DO_STRIP AND redbloom_strip)  # cmake --install --strip
  get_filename_component(extension "${redbloom_python_extension}" NAME)
  execute_process(COMMAND "${redbloom_strip}" "$ENV{DESTDIR}${destination}/${extension}")
endif()
file(INSTALL DESTINATION "${destination}" TYPE FILE FILES ${redbloom_python_files})
if(reads)
  message(STATUS "redbloom: Python package in ${CMAKE_INSTALL_PREFIX}/${package_dir}, "
                 "where ${redbloom_python} finds it")
else()
  message(STATUS "redbloom: Python package in ${CMAKE_INSTALL_PREFIX}/${package_dir}; "
                 "${redbloom_python} does not read that directory: set "
                 "PYTHONPATH=${CMAKE_INSTALL_PREFIX}/${package_dir} to import redbloom")
endif()
