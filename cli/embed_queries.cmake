# Compile the canned queries into the binary:
#   cmake -DDIR=queries -DOUT=queries_gen.c -P embed_queries.cmake
# writes one char array per DIR/NAME.sql and the table cli_queries[] (see
# cli/cli.h), sorted by name.
file(GLOB files ${DIR}/*.sql)
list(SORT files)
set(arrays "")
set(table "")
set(i 0)
foreach(f ${files})
  get_filename_component(name ${f} NAME_WE)
  file(READ ${f} hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
  string(APPEND arrays "static const char query_${i}[] = {${body} 0x00};\n")
  string(APPEND table "    {\"${name}\", query_${i}},\n")
  math(EXPR i "${i} + 1")
endforeach()
file(WRITE ${OUT} "/* generated from the .sql files of ${DIR} by cli/embed_queries.cmake */\n"
  "#include \"cli/cli.h\"\n\n${arrays}\n"
  "const cli_query cli_queries[] = {\n${table}    {0, 0}\n};\n"
  "const size_t cli_n_queries = ${i};\n")
