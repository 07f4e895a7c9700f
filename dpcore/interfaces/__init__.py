"""Ways in and out: the command line, safe CSV export, typed grids, publishing, the classroom store."""
