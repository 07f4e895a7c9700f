"""Ways in and out: the command line, publishing (and its methods compared), the classroom store."""
