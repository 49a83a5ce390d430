# Writes the MySQL 8.0/8.4 and Galera fixtures (no such servers here): values
# follow the MySQL 8.0/8.4 Reference Manual ("Server Status Variables",
# "Server System Variables", "Semisynchronous Replication Monitoring",
# SHOW BINARY LOGS, INFORMATION_SCHEMA PROCESSLIST / INNODB_TRX) and the
# Galera documentation ("Galera Status Variables").
import os
import sys
T=sys.argv[1] if len(sys.argv) > 1 else 'collector/testdata'
def vertical(cols, rows):
    w=max(len(c) for c in cols)
    out=[]
    for i,r in enumerate(rows,1):
        out.append('*************************** %d. row ***************************'%i)
        for c,v in zip(cols,r):
            out.append('%s: %s'%(c.rjust(w), 'NULL' if v is None else v))
    return '\n'.join(out)+'\n'
def nv(path, pairs, cols=('Variable_name','Value')):
    open(os.path.join(T,path),'w').write(vertical(cols, pairs))

status84 = '''Aborted_clients 3
Aborted_connects 1
Acl_cache_items_count 0
Binlog_cache_disk_use 0
Binlog_cache_use 1204
Binlog_stmt_cache_disk_use 0
Binlog_stmt_cache_use 12
Bytes_received 9834122
Bytes_sent 48213310
Caching_sha2_password_rsa_public_key -----BEGIN PUBLIC KEY-----|MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAwk2d1fEx|-----END PUBLIC KEY-----|
Com_admin_commands 0
Com_begin 210
Com_commit 205
Com_delete 33
Com_insert 1520
Com_replica_start 1
Com_select 40211
Com_set_option 88
Com_show_replica_status 97
Com_show_status 310
Com_update 412
Connection_errors_accept 0
Connection_errors_internal 0
Connection_errors_max_connections 2
Connection_errors_peer_address 0
Connection_errors_select 0
Connection_errors_tcpwrap 0
Connections 812
Created_tmp_disk_tables 4
Created_tmp_files 5
Created_tmp_tables 390
Current_tls_ca ca.pem
Current_tls_version TLSv1.2,TLSv1.3
Error_log_buffered_bytes 4096
Error_log_buffered_events 25
Error_log_expired_events 0
Error_log_latest_write 1718031200123456
Flush_commands 3
Global_connection_memory 0
Handler_commit 4188
Handler_delete 33
Handler_external_lock 9210
Handler_read_first 120
Handler_read_key 51200
Handler_read_next 90211
Handler_read_rnd_next 120443
Handler_rollback 2
Handler_update 412
Handler_write 20345
Innodb_buffer_pool_dump_status Dumping of buffer pool not started
Innodb_buffer_pool_load_status Buffer pool(s) load completed at 240610 12:00:01
Innodb_buffer_pool_resize_status 
Innodb_buffer_pool_resize_status_code 0
Innodb_buffer_pool_resize_status_progress 0
Innodb_buffer_pool_pages_data 2310
Innodb_buffer_pool_bytes_data 37847040
Innodb_buffer_pool_pages_dirty 12
Innodb_buffer_pool_bytes_dirty 196608
Innodb_buffer_pool_pages_flushed 8841
Innodb_buffer_pool_pages_free 5750
Innodb_buffer_pool_pages_misc 132
Innodb_buffer_pool_pages_total 8192
Innodb_buffer_pool_read_ahead_rnd 0
Innodb_buffer_pool_read_ahead 0
Innodb_buffer_pool_read_ahead_evicted 0
Innodb_buffer_pool_read_requests 2211034
Innodb_buffer_pool_reads 1804
Innodb_buffer_pool_wait_free 0
Innodb_buffer_pool_write_requests 120331
Innodb_data_fsyncs 3120
Innodb_data_pending_fsyncs 0
Innodb_data_pending_reads 0
Innodb_data_pending_writes 0
Innodb_data_read 29655040
Innodb_data_reads 1933
Innodb_data_writes 11820
Innodb_data_written 190283776
Innodb_dblwr_pages_written 4210
Innodb_dblwr_writes 620
Innodb_redo_log_read_only OFF
Innodb_redo_log_uuid 1075899837
Innodb_redo_log_checkpoint_lsn 48200111
Innodb_redo_log_current_lsn 48233123
Innodb_redo_log_flushed_to_disk_lsn 48233123
Innodb_redo_log_logical_size 33012
Innodb_redo_log_physical_size 3276800
Innodb_redo_log_capacity_resized 104857600
Innodb_redo_log_resize_status OK
Innodb_log_waits 0
Innodb_log_write_requests 98422
Innodb_log_writes 6120
Innodb_os_log_fsyncs 3012
Innodb_os_log_pending_fsyncs 0
Innodb_os_log_pending_writes 0
Innodb_os_log_written 20812288
Innodb_page_size 16384
Innodb_pages_created 610
Innodb_pages_read 1803
Innodb_pages_written 8841
Innodb_redo_log_enabled ON
Innodb_row_lock_current_waits 0
Innodb_row_lock_time 120
Innodb_row_lock_time_avg 12
Innodb_row_lock_time_max 51
Innodb_row_lock_waits 10
Innodb_rows_deleted 33
Innodb_rows_inserted 15210
Innodb_rows_read 310221
Innodb_rows_updated 412
Innodb_system_rows_deleted 0
Innodb_system_rows_inserted 210
Innodb_system_rows_read 98120
Innodb_system_rows_updated 310
Innodb_sampled_pages_read 0
Innodb_sampled_pages_skipped 0
Innodb_num_open_files 18
Innodb_truncated_status_writes 0
Innodb_undo_tablespaces_total 2
Innodb_undo_tablespaces_implicit 2
Innodb_undo_tablespaces_explicit 0
Innodb_undo_tablespaces_active 2
Key_blocks_not_flushed 0
Key_blocks_unused 6698
Key_blocks_used 0
Key_read_requests 0
Key_reads 0
Key_write_requests 0
Key_writes 0
Locked_connects 0
Max_execution_time_exceeded 0
Max_execution_time_set 0
Max_execution_time_set_failed 0
Max_used_connections 14
Max_used_connections_time 2024-06-10 12:03:44
Not_flushed_delayed_rows 0
Ongoing_anonymous_transaction_count 0
Open_files 8
Open_streams 0
Open_table_definitions 120
Open_tables 256
Opened_files 8
Opened_table_definitions 150
Opened_tables 410
Performance_schema_accounts_lost 0
Performance_schema_cond_classes_lost 0
Performance_schema_digest_lost 0
Performance_schema_users_lost 0
Prepared_stmt_count 0
Queries 43211
Questions 42110
Replica_open_temp_tables 0
Resource_group_supported ON
Rpl_semi_sync_replica_status OFF
Rpl_semi_sync_source_clients 2
Rpl_semi_sync_source_net_avg_wait_time 0
Rpl_semi_sync_source_net_wait_time 0
Rpl_semi_sync_source_net_waits 0
Rpl_semi_sync_source_no_times 0
Rpl_semi_sync_source_no_tx 0
Rpl_semi_sync_source_status ON
Rpl_semi_sync_source_timefunc_failures 0
Rpl_semi_sync_source_tx_avg_wait_time 412
Rpl_semi_sync_source_tx_wait_time 860321
Rpl_semi_sync_source_tx_waits 2088
Rpl_semi_sync_source_wait_pos_backtraverse 0
Rpl_semi_sync_source_wait_sessions 0
Rpl_semi_sync_source_yes_tx 2088
Rsa_public_key -----BEGIN PUBLIC KEY-----|MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAx7m2b9Qy|-----END PUBLIC KEY-----|
Secondary_engine_execution_count 0
Select_full_join 0
Select_full_range_join 0
Select_range 210
Select_range_check 0
Select_scan 1520
Slow_launch_threads 0
Slow_queries 2
Sort_merge_passes 0
Sort_range 10
Sort_rows 3120
Sort_scan 140
Ssl_accept_renegotiates 0
Ssl_accepts 0
Ssl_callback_cache_hits 0
Ssl_cipher 
Ssl_cipher_list 
Ssl_client_connects 0
Ssl_connect_renegotiates 0
Ssl_ctx_verify_depth 18446744073709551615
Ssl_ctx_verify_mode 5
Ssl_default_timeout 0
Ssl_finished_accepts 0
Ssl_finished_connects 0
Ssl_server_not_after Jun  8 12:00:00 2034 GMT
Ssl_server_not_before Jun 10 12:00:00 2024 GMT
Ssl_session_cache_hits 0
Ssl_session_cache_misses 0
Ssl_session_cache_mode SERVER
Ssl_session_cache_overflows 0
Ssl_session_cache_size 128
Ssl_session_cache_timeout 300
Ssl_session_cache_timeouts 0
Ssl_sessions_reused 0
Ssl_used_session_cache_entries 0
Ssl_verify_depth 0
Ssl_verify_mode 0
Ssl_version 
Table_locks_immediate 920
Table_locks_waited 0
Table_open_cache_hits 40122
Table_open_cache_misses 410
Table_open_cache_overflows 0
Tc_log_max_pages_used 0
Tc_log_page_size 0
Tc_log_page_waits 0
Telemetry_traces_supported OFF
Threads_cached 2
Threads_connected 5
Threads_created 7
Threads_running 2
Tls_library_version OpenSSL 3.0.13 30 Jan 2024
Uptime 86412
Uptime_since_flush_status 86412'''
def pairs(txt):
    out=[]
    for line in txt.split('\n'):
        n,_,v=line.partition(' ')
        out.append((n, v.replace('|','\n').rstrip('\n') if '|' in v else v))
    return out
nv('status/mysql-8.4.txt', pairs(status84))

status80 = '''Aborted_clients 0
Aborted_connects 0
Binlog_cache_use 310
Bytes_received 1203311
Bytes_sent 9012334
Com_select 9120
Com_insert 310
Com_show_slave_status 41
Com_slave_start 1
Connection_errors_max_connections 0
Connections 120
Handler_commit 1200
Innodb_buffer_pool_pages_data 1012
Innodb_buffer_pool_pages_dirty 3
Innodb_buffer_pool_pages_free 7040
Innodb_buffer_pool_pages_misc 140
Innodb_buffer_pool_pages_total 8192
Innodb_buffer_pool_pages_made_young 12
Innodb_rows_read 52011
Performance_schema_digest_lost 0
Queries 10311
Questions 10002
Rpl_semi_sync_master_clients 1
Rpl_semi_sync_master_status ON
Rpl_semi_sync_master_yes_tx 300
Rpl_semi_sync_master_no_tx 2
Rpl_semi_sync_slave_status OFF
Slave_open_temp_tables 0
Threads_connected 4
Threads_running 1
Uptime 3600'''
nv('status/mysql-8.0.txt', pairs(status80))

vars84 = '''autocommit ON
binlog_format ROW
datadir /var/lib/mysql/
gtid_mode ON
enforce_gtid_consistency ON
hostname db1
innodb_buffer_pool_size 134217728
innodb_flush_log_at_trx_commit 1
innodb_version 8.4.0
log_bin ON
long_query_time 10.000000
max_connections 151
read_only OFF
replica_net_timeout 60
rpl_semi_sync_source_enabled ON
rpl_semi_sync_source_timeout 10000
rpl_semi_sync_source_trace_level 32
rpl_semi_sync_source_wait_for_replica_count 1
rpl_semi_sync_source_wait_no_replica ON
rpl_semi_sync_source_wait_point AFTER_SYNC
server_id 1
sql_mode ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION
super_read_only OFF
sync_binlog 1
table_open_cache 4000
version 8.4.0
version_comment MySQL Community Server - GPL'''
nv('variables/mysql-8.4.txt', pairs(vars84))

semi_cols=('KIND','VARIABLE_NAME','VARIABLE_VALUE')
def semi(path, st, vr):
    rows=[('status',)+tuple(l.split(' ',1)) for l in st.split('\n')]+[('variable',)+tuple(l.split(' ',1)) for l in vr.split('\n')]
    open(os.path.join(T,path),'w').write(vertical(semi_cols, rows))
semi('semisync/mysql-8.4-primary.txt', '''Rpl_semi_sync_source_clients 2
Rpl_semi_sync_source_net_avg_wait_time 0
Rpl_semi_sync_source_net_wait_time 0
Rpl_semi_sync_source_net_waits 0
Rpl_semi_sync_source_no_times 0
Rpl_semi_sync_source_no_tx 0
Rpl_semi_sync_source_status ON
Rpl_semi_sync_source_timefunc_failures 0
Rpl_semi_sync_source_tx_avg_wait_time 412
Rpl_semi_sync_source_tx_wait_time 860321
Rpl_semi_sync_source_tx_waits 2088
Rpl_semi_sync_source_wait_pos_backtraverse 0
Rpl_semi_sync_source_wait_sessions 0
Rpl_semi_sync_source_yes_tx 2088
Rpl_semi_sync_replica_status OFF''', '''rpl_semi_sync_replica_enabled OFF
rpl_semi_sync_replica_trace_level 32
rpl_semi_sync_source_enabled ON
rpl_semi_sync_source_timeout 10000
rpl_semi_sync_source_trace_level 32
rpl_semi_sync_source_wait_for_replica_count 1
rpl_semi_sync_source_wait_no_replica ON
rpl_semi_sync_source_wait_point AFTER_SYNC''')
semi('semisync/mysql-8.0-fell-back.txt', '''Rpl_semi_sync_master_clients 0
Rpl_semi_sync_master_net_avg_wait_time 0
Rpl_semi_sync_master_net_wait_time 0
Rpl_semi_sync_master_net_waits 0
Rpl_semi_sync_master_no_times 1
Rpl_semi_sync_master_no_tx 7
Rpl_semi_sync_master_status OFF
Rpl_semi_sync_master_timefunc_failures 0
Rpl_semi_sync_master_tx_avg_wait_time 655
Rpl_semi_sync_master_tx_wait_time 196500
Rpl_semi_sync_master_tx_waits 300
Rpl_semi_sync_master_wait_pos_backtraverse 0
Rpl_semi_sync_master_wait_sessions 0
Rpl_semi_sync_master_yes_tx 300
Rpl_semi_sync_slave_status OFF''', '''rpl_semi_sync_master_enabled ON
rpl_semi_sync_master_timeout 10000
rpl_semi_sync_master_trace_level 32
rpl_semi_sync_master_wait_for_slave_count 1
rpl_semi_sync_master_wait_no_slave ON
rpl_semi_sync_master_wait_point AFTER_SYNC
rpl_semi_sync_slave_enabled OFF
rpl_semi_sync_slave_trace_level 32''')

open(os.path.join(T,'binlog/mysql-8.4-binary-logs.txt'),'w').write(vertical(('Log_name','File_size','Encrypted'),
    [('binlog.000007','180','No'),('binlog.000008','1073742231','No'),('binlog.000009','52311876','No')]))

pl_cols=('USER','HOST','COMMAND','STATE','THREADS','SECONDS','OLDEST_QUERY')
open(os.path.join(T,'processlist/mysql-8.0-threads.txt'),'w').write(vertical(pl_cols, [
    ('event_scheduler','localhost','Daemon','Waiting on empty queue','1','86400',None),
    ('repl','10.0.0.12','Binlog Dump GTID','Source has sent all binlog to replica; waiting for more updates','2','172790',None),
    ('app','10.0.1.5','Sleep','','37','412',None),
    ('app','10.0.1.5','Query','executing','3','14','12'),
    ('app','10.0.1.6','Query','waiting for handler commit','1','0','0'),
    ('report','10.0.1.9','Query','Sending to client','1','95','95'),
]))
open(os.path.join(T,'processlist/mysql-8.0-trx.txt'),'w').write(vertical(('TRX','OLDEST'), [('4','97')]))

galera = '''wsrep_local_state_uuid 6c06e583-686f-11e6-b9e3-8336ad58138c
wsrep_protocol_version 10
wsrep_last_committed 409745
wsrep_replicated 16109
wsrep_replicated_bytes 6526788
wsrep_repl_keys 52635
wsrep_repl_keys_bytes 808498
wsrep_repl_data_bytes 4878522
wsrep_repl_other_bytes 0
wsrep_received 17831
wsrep_received_bytes 3365928
wsrep_local_commits 16109
wsrep_local_cert_failures 2
wsrep_local_replays 0
wsrep_local_send_queue 0
wsrep_local_send_queue_max 2
wsrep_local_send_queue_min 0
wsrep_local_send_queue_avg 0.000288
wsrep_local_recv_queue 0
wsrep_local_recv_queue_max 41
wsrep_local_recv_queue_min 0
wsrep_local_recv_queue_avg 0.012531
wsrep_local_cached_downto 393656
wsrep_flow_control_paused_ns 2831941750
wsrep_flow_control_paused 0.000012
wsrep_flow_control_sent 3
wsrep_flow_control_recv 11
wsrep_flow_control_active false
wsrep_flow_control_requested false
wsrep_cert_deps_distance 21.863467
wsrep_apply_oooe 0.045161
wsrep_apply_oool 0.000000
wsrep_apply_window 1.071226
wsrep_apply_waits 0
wsrep_commit_oooe 0.000000
wsrep_commit_oool 0.000000
wsrep_commit_window 1.000322
wsrep_local_state 4
wsrep_local_state_comment Synced
wsrep_cert_index_size 30
wsrep_cert_bucket_count 22
wsrep_gcache_pool_size 7869012
wsrep_causal_reads 0
wsrep_cert_interval 0.090483
wsrep_open_transactions 0
wsrep_open_connections 0
wsrep_incoming_addresses 10.0.0.1:3306,10.0.0.2:3306,10.0.0.3:3306
wsrep_cluster_weight 3
wsrep_desync_count 0
wsrep_evs_delayed 
wsrep_evs_evict_list 
wsrep_evs_repl_latency 0.000277619/0.000584637/0.00128293/0.000223479/78
wsrep_evs_state OPERATIONAL
wsrep_gcomm_uuid 7b5b0a58-686f-11e6-a2c3-0b2a2c3fc0d1
wsrep_gmcast_segment 0
wsrep_applier_thread_count 4
wsrep_cluster_capabilities 
wsrep_cluster_conf_id 3
wsrep_cluster_size 3
wsrep_cluster_state_uuid 6c06e583-686f-11e6-b9e3-8336ad58138c
wsrep_cluster_status Primary
wsrep_connected ON
wsrep_local_bf_aborts 1
wsrep_local_index 0
wsrep_provider_capabilities :MULTI_MASTER:CERTIFICATION:PARALLEL_APPLYING:TRX_REPLAY:ISOLATION:PAUSE:CAUSAL_READS:INCREMENTAL_WRITESET:UNORDERED:PREORDERED:STREAMING:NBO:
wsrep_provider_name Galera
wsrep_provider_vendor Codership Oy <info@codership.com>
wsrep_provider_version 26.4.16(r7dce5149)
wsrep_ready ON
wsrep_rollbacker_thread_count 1
wsrep_thread_count 5'''
nv('galera/mariadb-10.11-galera.txt', pairs(galera))
