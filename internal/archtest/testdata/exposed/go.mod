module example.com/exposed

go 1.22
