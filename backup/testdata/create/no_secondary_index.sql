CREATE TABLE `plain` (
  `id` bigint(20) NOT NULL,
  `v` varchar(10) DEFAULT NULL,
  `u` int(11) DEFAULT NULL,
  PRIMARY KEY (`id`),
  UNIQUE KEY `u` (`u`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci