"""Reading and writing files: arena-hard formats, JSONL, config files, imports."""
