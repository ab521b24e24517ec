# cmake -DOUT=file.c -DJS=report.js -DCSS=report.css -P embed.cmake
# Writes OUT with the page's script and style as two C arrays (the HTML
# report embeds them verbatim, agent/report_html.c), each NUL-terminated.
function(embed var path out)
  file(READ "${path}" hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
  # a line break every 16 bytes keeps the file readable by editors
  string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){16})" "\\1\n" body "${body}")
  file(APPEND "${out}" "const char ${var}[] = {\n${body}0x00\n};\n")
endfunction()
# the script is inlined in a <script> element: it must not close it
file(READ "${JS}" js)
string(TOLOWER "${js}" js)
string(FIND "${js}" "</script" at)
if(NOT at EQUAL -1)
  message(FATAL_ERROR "${JS}: contains '</script' at byte ${at}, which would end the page's "
    "script element early; write it as '<\\/script'")
endif()
file(WRITE "${OUT}.tmp" "/* generated from agent/html by agent/html/embed.cmake; do not edit */\n")
embed(agent_html_js "${JS}" "${OUT}.tmp")
embed(agent_html_css "${CSS}" "${OUT}.tmp")
file(RENAME "${OUT}.tmp" "${OUT}")
