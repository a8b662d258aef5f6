
:Task Environment*profile_start_time2€€¨±ãŸçË