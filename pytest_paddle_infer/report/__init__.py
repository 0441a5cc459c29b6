"""Reports: the failure text, the terminal summary and properties, the report files."""
