package lab

// ReadSysctl lets the black-box tests read a namespace's sysctl back.
var ReadSysctl = readSysctl
