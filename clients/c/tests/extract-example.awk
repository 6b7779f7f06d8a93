# awk -v name=FILE.c -f extract-example.awk docs/c-library.md
# Prints the fenced block (```c, or ```text for commands) that follows the line "<!-- example: FILE -->", so that the
# tests compile and run exactly what the page shows.
$0 == "<!-- example: " name " -->" { armed = 1; next }
armed && /^```[a-z]*$/ { inside = 1; armed = 0; next }
inside && /^```$/ { inside = 0; exit }
inside { print }
