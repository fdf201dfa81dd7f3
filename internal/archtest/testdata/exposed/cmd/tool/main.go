// Command tool is package main: no other package can import it.
package main

import h "example.com/exposed/internal/hidden"

func Exported(s h.Secret) {}

func main() {}
