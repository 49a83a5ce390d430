package client

// dbpilot: the collation IDs the handshake needs, in place of the TiDB
// parser's charset package, which brings golang.org/x/text's CJK encoding
// tables and zap into every program that connects (see
// ../README.dbpilot.md). A name missing here is not an error: the handshake
// sends the default collation and the connection sets the named one with
// SET NAMES, so the server checks it.
var collationIDs = map[string]int{
	"big5_chinese_ci":        1,
	"latin1_swedish_ci":      8,
	"ascii_general_ci":       11,
	"gbk_chinese_ci":         28,
	"utf8_general_ci":        33,
	"utf8mb3_general_ci":     33,
	"utf8mb4_general_ci":     45,
	"utf8mb4_bin":            46,
	"latin1_bin":             47,
	"binary":                 63,
	"utf8_bin":               83,
	"utf8mb3_bin":            83,
	"gbk_bin":                87,
	"utf8_unicode_ci":        192,
	"utf8mb3_unicode_ci":     192,
	"utf8mb4_unicode_ci":     224,
	"utf8mb4_unicode_520_ci": 246,
	"gb18030_chinese_ci":     248,
	"gb18030_bin":            249,
	"utf8mb4_0900_ai_ci":     255,
	"utf8mb4_0900_bin":       309,
	"utf8mb4_uca1400_ai_ci":  2304,
}
