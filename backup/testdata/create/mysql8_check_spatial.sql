CREATE TABLE `events` (
  `id` bigint NOT NULL AUTO_INCREMENT,
  `ts` datetime NOT NULL,
  `kind` varchar(20) COLLATE utf8mb4_bin NOT NULL,
  `geo` point NOT NULL /*!80003 SRID 4326 */,
  PRIMARY KEY (`id`),
  KEY `kind` (`kind`) /*!80000 INVISIBLE */,
  SPATIAL KEY `geo` (`geo`),
  CONSTRAINT `events_chk_1` CHECK ((`kind` <> _utf8mb4''))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_0900_ai_ci