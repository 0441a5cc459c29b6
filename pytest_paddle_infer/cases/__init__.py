"""Cases: what to check. A Case (model, shapes, run mode, tolerances) from the command
line, a YAML suite or a paddle_case marker; suite parsing with file:line errors; narrowing."""
