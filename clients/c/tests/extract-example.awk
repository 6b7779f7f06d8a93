# awk -v name=FILE.c -f extract-example.awk docs/c-library.md
# Prints the ```c block that follows the line "<!-- example: FILE.c -->", so that the tests compile and run exactly
# what the page shows.
$0 == "<!-- example: " name " -->" { armed = 1; next }
armed && /^```c$/ { inside = 1; armed = 0; next }
inside && /^```$/ { inside = 0; exit }
inside { print }
