"""Reports of a finished scoring run: read the results, render the tables, write files and plots."""
