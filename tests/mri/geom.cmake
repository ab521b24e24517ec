# Cache geometries (mri/geom.c) through `ameba geometry` and `ameba list
# presets`:
#   geom_host_sysfs     the host preset read from another machine's sysfs:
#                       AMEBA_SYSFS=tests/mri/sysfs_vm (cpu0's cache/indexN,
#                       node/online, cpu/online of a VM with a 32 KiB 8-way
#                       L1D, 512 KiB 8-way L2, 32 MiB 16-way L3, 2 nodes and
#                       16 CPUs); --preset host wins over the suite's
#                       AMEBA_PRESET, AMEBA_PRESET=host gives the same; an
#                       empty tree gives the fallbacks
add_test(NAME geom_host_sysfs
  COMMAND ${AMEBA_FRAGMENT_DIR}/geom_sysfs.sh ${CMAKE_BINARY_DIR}/bin/ameba
          ${AMEBA_FRAGMENT_DIR}/sysfs_vm)
set_tests_properties(geom_host_sysfs PROPERTIES TIMEOUT 60)
