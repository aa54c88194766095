package pgclient

import "context"

// PgbenchScale reads the scale of a pgbench database the way pgbench does for its built-in scripts: the
// number of rows in pgbench_branches. A missing table is an error (SQLSTATE 42P01) the caller can explain.
func (c *Conn) PgbenchScale(ctx context.Context) (int, error) {
	var n int
	err := c.conn.QueryRow(ctx, "SELECT count(*) FROM pgbench_branches").Scan(&n)
	return n, c.wrap("reading the pgbench scale from pgbench_branches", err)
}
