// Package top is the highest layer: it may import base.
package top

import "example.com/planted/base"

// Rows shares 29 lines with stray.Rows: one short of a finding.
func Rows() []string {
	_ = base.Size
	return []string{
		"row 01",
		"row 02",
		"row 03",
		"row 04",
		"row 05",
		"row 06",
		"row 07",
		"row 08",
		"row 09",
		"row 10",
		"row 11",
		"row 12",
		"row 13",
		"row 14",
		"row 15",
		"row 16",
		"row 17",
		"row 18",
		"row 19",
		"row 20",
		"row 21",
		"row 22",
		"row 23",
		"row 24",
		"row 25",
		"row 26",
	}
}
