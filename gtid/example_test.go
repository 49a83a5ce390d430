package gtid_test

import (
	"fmt"

	"github.com/dbpilot/dbpilot/gtid"
)

func ExampleErrantMySQLStrings() {
	errant, err := gtid.ErrantMySQLStrings(
		"3E11FA47-71CA-11E1-9E33-C80AA9429562:1-20,\n2174b383-5441-11e8-b90a-c80aa9429562:1-3",
		"3e11fa47-71ca-11e1-9e33-c80aa9429562:1-18",
	)
	fmt.Println(errant, err)
	// Output: 2174b383-5441-11e8-b90a-c80aa9429562:1-3,3e11fa47-71ca-11e1-9e33-c80aa9429562:19-20 <nil>
}

func ExampleCompareMariaPositions() {
	replica, _ := gtid.ParseMariaList("0-1-100,1-2-7")
	source, _ := gtid.ParseMariaList("0-1-120,1-3-7")
	for _, c := range gtid.CompareMariaPositions(replica, source) {
		fmt.Println(c)
	}
	// Output:
	// domain 0: 0-1-100 behind 0-1-120
	// domain 1: 1-2-7 diverged 1-3-7
}

func ExampleMariaList_Subtract() {
	replica, _ := gtid.ParseMariaList("0-1-100,0-2-105")
	source, _ := gtid.ParseMariaList("0-1-100,0-2-103")
	fmt.Println(gtid.ErrantMariaDB(replica, source))
	fmt.Println(replica.Subtract(source))
	// Output:
	// 0-2-105
	// 0-2:104-105
}
