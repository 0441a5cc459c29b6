"""Model files: zoo entries, paths and builders resolved to an exported program, once per
cache dir (file lock, atomic rename, manifest); the inputs a case feeds."""
