# The agent's own cost during a default `ameba run` (agent_cost.sh):
# `make bench-agent-cost` prints agent_cpu_share_pct (target <= 1%).
add_custom_target(bench-agent-cost
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/agent_cost.sh ${CMAKE_BINARY_DIR}/bin/ameba
          ${CMAKE_BINARY_DIR}/tests/bin
  DEPENDS ameba wl_false_sharing wl_imbalance
  COMMENT "agent cost benchmark" VERBATIM USES_TERMINAL)
