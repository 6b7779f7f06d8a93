# Turns the documented sample configuration (config/usherd.toml) into the usherd.toml(5) manual page, so that the
# page lists every key the sample does, with the same words, and cannot drift from it.
#
#   awk -f man/usherd.toml.5.awk config/usherd.toml > usherd.toml.5
#
# The sample's layout: a comment paragraph says what follows; `key = value` (or `# key = value`, a key left at its
# default or an example) ends the paragraph that documents it; `[section]` (or `# [section]`) starts a section.

function roff(text) {
    gsub(/\\/, "\\e", text)
    sub(/^[.']/, "\\\\\\&&", text)
    return text
}

function flush(    i) {
    if (count == 0) return
    print ".PP"
    for (i = 1; i <= count; i++) print roff(buffered[i])
    count = 0
}

BEGIN {
    print ".TH USHERD.TOML 5 \"\" \"usher\" \"File Formats\""
    print ".SH NAME"
    print "usherd.toml \\- the configuration of usherd"
    print ".SH SYNOPSIS"
    print ".I /etc/usher/usherd.toml"
    print ".PP"
    print "usherd \\-\\-config \\fIFILE\\fR"
    print ".SH DESCRIPTION"
    count = 0
    header = 1
}

# The sample's first line names the file; the description starts below it.
NR == 1 { next }

/^$/ {
    flush()
    if (header) { header = 0; print ".SH KEYS" }
    next
}

/^(# )?\[\[?[A-Za-z0-9_.-]+\]\]?$/ {
    section = $0
    sub(/^# /, "", section)
    if (header) { header = 0; print ".SH KEYS" }
    # A paragraph just above a section header describes the section.
    print ".SS " roff(section)
    flush()
    next
}

/^(# )?[a-z_]+ = / {
    key = $0
    sub(/^# /, "", key)
    print ".TP"
    print "\\fB" roff(key) "\\fR"
    for (i = 1; i <= count; i++) print roff(buffered[i])
    count = 0
    next
}

/^#/ {
    line = $0
    sub(/^# ?/, "", line)
    buffered[++count] = line
    next
}

END {
    flush()
    print ".SH FILES"
    print ".TP"
    print ".I /etc/usher/usherd.toml"
    print "The configuration of the system daemon (systemd's ConfigurationDirectory=usher)."
    print ".TP"
    print ".I /usr/share/doc/usher/usherd.toml.sample"
    print "This documented sample, with every key at its default (under the installation prefix)."
    print ".SH SEE ALSO"
    print ".BR usherd (8),"
    print ".BR usher (1)"
}
