# The source tree's own rules (docs/architecture.md): layers include only
# what they may (a private *_int.h only from its own directory), no
# source file is over 1,500 lines, and no CMake file compiles another
# directory's sources by path. scripts/check_layers.py prints each
# offending line with the fix.
add_test(NAME house_layers
  COMMAND python3 ${CMAKE_SOURCE_DIR}/scripts/check_layers.py ${CMAKE_SOURCE_DIR})
set_tests_properties(house_layers PROPERTIES LABELS house)
