CREATE TABLE `tenant_items` (
  `tenant_id` int(11) NOT NULL,
  `id` bigint(20) NOT NULL AUTO_INCREMENT,
  `v` varchar(10) DEFAULT NULL,
  PRIMARY KEY (`tenant_id`,`id`),
  KEY `id` (`id`),
  KEY `v` (`v`)
) ENGINE=InnoDB AUTO_INCREMENT=5 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci