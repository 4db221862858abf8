"""``sundial``, the command line: every route of Sundial's API, for people (tables) and scripts
(``--output json``, exit codes)."""
