// Schema migrations, applied in order at start-up. Written with Kysely's schema builder so the
// same steps run on SQLite and PostgreSQL; only the id column differs between the two.
import { type Kysely, type Migration, type MigrationProvider, sql, type CreateTableBuilder } from 'kysely';
import { perfMigration } from './migration-perf.js';
import { createRequestCacheCounters } from './node-index.js';
import { listIndexesMigration } from './migration-lists.js';
import { agentCountersMigration } from './migration-agent.js';
import { nodeSeenMigration } from './migration-seen.js';
import type { Dialect } from './dialect.js';
import { agentCadenceMigration, carveIdsMigration } from './migration-real-agent.js';
import { spoolMigration } from './migration-spool.js';
import { productionMigration } from './migration-production.js';
import { logsMigration } from './migration-logs.js';
import { counterLockOrderMigration } from './migration-lock-order.js';
import { contentOnChangeMigration } from './migration-content-change.js';
import { carveFilesCounterMigration } from './migration-carve-files.js';

function withId<T extends string>(t: CreateTableBuilder<T, never>, dialect: Dialect) {
  return dialect === 'postgres'
    ? t.addColumn('id', 'serial', (c) => c.primaryKey())
    : t.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement());
}

const text = 'text' as const;
const int = 'integer' as const;
const big = 'bigint' as const;

function initial(dialect: Dialect): Migration {
  return {
    async up(db: Kysely<any>) {
      const T = (name: string) => withId(db.schema.createTable<string>(name), dialect);
      const envText = [
        'uuid',
        'name',
        'type',
        'hostname',
        'icon',
        'secret',
        'certificate',
        'flags',
        'options',
        'schedule',
        'packs',
        'decorators',
        'atc',
        'configuration',
        'enroll_path',
        'enroll_secret_path',
        'remove_secret_path',
        'config_path',
        'log_path',
        'query_read_path',
        'query_write_path',
        'carver_init_path',
        'carver_block_path',
        'enroll_expire',
        'remove_expire',
        'deb_package',
        'msi_package',
        'pkg_package',
        'rpm_package',
        'created_at',
        'updated_at',
      ];
      const envInt = [
        'user_id',
        'accept_enrolls',
        'config_tls',
        'logging_tls',
        'query_tls',
        'carves_tls',
        'debug_http',
        'config_interval',
        'log_interval',
        'query_interval',
      ];
      let env = T('environments');
      for (const c of envText) env = env.addColumn(c, text, (b) => b.notNull().defaultTo(''));
      for (const c of envInt) env = env.addColumn(c, int, (b) => b.notNull().defaultTo(0));
      await env.execute();
      await db.schema.createIndex('environments_uuid').unique().on('environments').column('uuid').execute();
      await db.schema.createIndex('environments_name').unique().on('environments').column('name').execute();

      await T('users')
        .addColumn('username', text, (c) => c.notNull().unique())
        .addColumn('fullname', text, (c) => c.notNull().defaultTo(''))
        .addColumn('email', text, (c) => c.notNull().defaultTo(''))
        .addColumn('password_hash', text, (c) => c.notNull())
        .addColumn('admin', int, (c) => c.notNull().defaultTo(0))
        .addColumn('service', int, (c) => c.notNull().defaultTo(0))
        .addColumn('api', int, (c) => c.notNull().defaultTo(0))
        .addColumn('totp_secret', text)
        .addColumn('totp_pending_secret', text)
        .addColumn('totp_last_step', big, (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', text, (c) => c.notNull())
        .addColumn('updated_at', text, (c) => c.notNull())
        .addColumn('last_login_at', text)
        .execute();

      await db.schema
        .createTable('user_env_access')
        .addColumn('user_id', int, (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('environment_id', int, (c) => c.notNull().references('environments.id').onDelete('cascade'))
        .addColumn('user_level', int, (c) => c.notNull().defaultTo(0))
        .addColumn('query_level', int, (c) => c.notNull().defaultTo(0))
        .addColumn('carve_level', int, (c) => c.notNull().defaultTo(0))
        .addColumn('admin_level', int, (c) => c.notNull().defaultTo(0))
        .addPrimaryKeyConstraint('user_env_access_pk', ['user_id', 'environment_id'])
        .execute();

      await db.schema
        .createTable('sessions')
        .addColumn('jti', text, (c) => c.primaryKey())
        .addColumn('user_id', int, (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('csrf_token', text, (c) => c.notNull())
        .addColumn('created_at', text, (c) => c.notNull())
        .addColumn('expires_at', text, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('sessions_user').on('sessions').column('user_id').execute();
      await db.schema.createIndex('sessions_expires').on('sessions').column('expires_at').execute();

      await T('recovery_codes')
        .addColumn('user_id', int, (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('code_hash', text, (c) => c.notNull())
        .addColumn('used_at', text)
        .execute();
      await db.schema.createIndex('recovery_codes_user').on('recovery_codes').column('user_id').execute();

      await db.schema
        .createTable('webauthn_credentials')
        .addColumn('id', text, (c) => c.primaryKey())
        .addColumn('user_id', int, (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('name', text, (c) => c.notNull())
        .addColumn('created_at', text, (c) => c.notNull())
        .addColumn('last_used_at', text)
        .execute();

      await db.schema
        .createTable('mfa_challenges')
        .addColumn('id', text, (c) => c.primaryKey())
        .addColumn('user_id', int, (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('environment_id', int, (c) => c.notNull())
        .addColumn('exp_hours', int, (c) => c.notNull())
        .addColumn('created_at', text, (c) => c.notNull())
        .addColumn('expires_at', text, (c) => c.notNull())
        .addColumn('failures', int, (c) => c.notNull().defaultTo(0))
        .addColumn('used', int, (c) => c.notNull().defaultTo(0))
        .execute();

      const nodeText = [
        'uuid',
        'node_key',
        'hostname',
        'localname',
        'ip_address',
        'country_code',
        'platform',
        'platform_bucket',
        'platform_version',
        'osquery_user',
        'osquery_version',
        'osquery_version_key',
        'cpu',
        'memory',
        'hardware_serial',
        'config_hash',
        'daemon_hash',
        'extra_data',
        'username',
        'system_info',
        'created_at',
        'updated_at',
      ];
      let nodes = T('nodes');
      for (const c of nodeText) nodes = nodes.addColumn(c, text, (b) => b.notNull().defaultTo(''));
      nodes = nodes
        .addColumn('bytes_received', big, (c) => c.notNull().defaultTo(0))
        .addColumn('environment_id', int, (c) => c.notNull().references('environments.id').onDelete('cascade'))
        .addColumn('user_id', int, (c) => c.notNull().defaultTo(0))
        .addColumn('last_seen', text)
        .addColumn('uptime_seconds', big, (c) => c.notNull().defaultTo(0))
        .addColumn('config_valid', int, (c) => c.notNull().defaultTo(1));
      await nodes.execute();
      await db.schema.createIndex('nodes_uuid').unique().on('nodes').column('uuid').execute();
      // One index per list filter/sort, each led by environment_id (every list is per env).
      const nodeIdx: [string, string[]][] = [
        ['nodes_env_lastseen', ['environment_id', 'last_seen', 'id']],
        ['nodes_env_created', ['environment_id', 'created_at', 'id']],
        ['nodes_env_hostname', ['environment_id', 'hostname', 'id']],
        ['nodes_env_localname', ['environment_id', 'localname', 'id']],
        ['nodes_env_ip', ['environment_id', 'ip_address', 'id']],
        ['nodes_env_platform', ['environment_id', 'platform', 'id']],
        ['nodes_env_version', ['environment_id', 'platform_version', 'id']],
        ['nodes_env_osquery', ['environment_id', 'osquery_version_key', 'id']],
        ['nodes_env_bucket_lastseen', ['environment_id', 'platform_bucket', 'last_seen']],
        ['nodes_osquery_key', ['osquery_version_key']],
      ];
      for (const [name, cols] of nodeIdx) {
        // PostgreSQL sorts NULL last ascending; SQLite first. last_seen is the one nullable sort
        // column: built NULLS FIRST on PostgreSQL, both directions read it in SQLite's order.
        if (dialect === 'postgres' && cols.includes('last_seen')) {
          await sql
            .raw(`create index ${name} on nodes (${cols.map((c) => (c === 'last_seen' ? 'last_seen nulls first' : c)).join(', ')})`)
            .execute(db);
        } else await db.schema.createIndex(name).on('nodes').columns(cols).execute();
      }

      await T('tags')
        .addColumn('name', text, (c) => c.notNull())
        .addColumn('description', text, (c) => c.notNull().defaultTo(''))
        .addColumn('color', text, (c) => c.notNull().defaultTo(''))
        .addColumn('icon', text, (c) => c.notNull().defaultTo(''))
        .addColumn('environment_id', int, (c) => c.notNull().references('environments.id').onDelete('cascade'))
        .addColumn('tag_type', int, (c) => c.notNull().defaultTo(6))
        .addColumn('custom_tag', text, (c) => c.notNull().defaultTo(''))
        .addColumn('auto_tag', int, (c) => c.notNull().defaultTo(0))
        .addColumn('cohort', int, (c) => c.notNull().defaultTo(0))
        .addColumn('created_by', text, (c) => c.notNull().defaultTo(''))
        .addColumn('created_at', text, (c) => c.notNull())
        .addColumn('updated_at', text, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('tags_env_name').unique().on('tags').columns(['environment_id', 'name']).execute();

      await db.schema
        .createTable('node_tags')
        .addColumn('node_id', int, (c) => c.notNull().references('nodes.id').onDelete('cascade'))
        .addColumn('tag_id', int, (c) => c.notNull().references('tags.id').onDelete('cascade'))
        .addPrimaryKeyConstraint('node_tags_pk', ['node_id', 'tag_id'])
        .execute();
      await db.schema.createIndex('node_tags_tag').on('node_tags').column('tag_id').execute();

      await T('settings')
        .addColumn('name', text, (c) => c.notNull())
        .addColumn('service', text, (c) => c.notNull())
        .addColumn('type', text, (c) => c.notNull())
        .addColumn('info', text, (c) => c.notNull().defaultTo(''))
        .addColumn('environment_id', int, (c) => c.notNull().defaultTo(0))
        .addColumn('boolean_value', int, (c) => c.notNull().defaultTo(0))
        .addColumn('integer_value', big, (c) => c.notNull().defaultTo(0))
        .addColumn('string_value', text, (c) => c.notNull().defaultTo(''))
        .addColumn('created_at', text, (c) => c.notNull())
        .addColumn('updated_at', text, (c) => c.notNull())
        .addColumn('deleted_at', text)
        .execute();
      await db.schema.createIndex('settings_key').unique().on('settings').columns(['service', 'name', 'environment_id']).execute();

      await T('log_sinks')
        .addColumn('name', text, (c) => c.notNull())
        .addColumn('type', text, (c) => c.notNull())
        .addColumn('source', text, (c) => c.notNull())
        .addColumn('info', text, (c) => c.notNull().defaultTo(''))
        .addColumn('enabled', int, (c) => c.notNull().defaultTo(1))
        .addColumn('environment_id', int, (c) => c.notNull().defaultTo(0))
        .addColumn('sort_order', int, (c) => c.notNull().defaultTo(0))
        .addColumn('config', text, (c) => c.notNull().defaultTo('{}'))
        .addColumn('bytes_sent', big, (c) => c.notNull().defaultTo(0))
        .addColumn('exports_count', big, (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', text, (c) => c.notNull())
        .addColumn('updated_at', text, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('log_sinks_env').on('log_sinks').columns(['environment_id', 'sort_order']).execute();

      let q = T('queries');
      for (const c of [
        'name',
        'query',
        'path',
        'type',
        'target',
        'targets',
        'creator',
        'expiration',
        'extra_data',
        'created_at',
        'updated_at',
      ])
        q = q.addColumn(c, text, (b) => b.notNull().defaultTo(''));
      for (const c of ['active', 'completed', 'deleted', 'expired', 'hidden', 'protected', 'errors', 'executions', 'expected'])
        q = q.addColumn(c, int, (b) => b.notNull().defaultTo(0));
      q = q.addColumn('environment_id', int, (c) => c.notNull().references('environments.id').onDelete('cascade'));
      await q.execute();
      await db.schema.createIndex('queries_env_name').unique().on('queries').columns(['environment_id', 'name']).execute();
      await db.schema.createIndex('queries_env_type').on('queries').columns(['environment_id', 'type', 'active']).execute();

      await db.schema
        .createTable('carve_files')
        .addColumn('uuid', text, (c) => c.primaryKey())
        .addColumn('query_id', int, (c) => c.notNull().references('queries.id').onDelete('cascade'))
        .addColumn('carve_id', text, (c) => c.notNull())
        .addColumn('session_id', text, (c) => c.notNull())
        .addColumn('path', text, (c) => c.notNull())
        .addColumn('status', text, (c) => c.notNull())
        .addColumn('archived', int, (c) => c.notNull().defaultTo(0))
        .addColumn('block_size', big, (c) => c.notNull().defaultTo(0))
        .addColumn('carve_size', big, (c) => c.notNull().defaultTo(0))
        .addColumn('total_blocks', int, (c) => c.notNull().defaultTo(0))
        .addColumn('completed_blocks', int, (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', text, (c) => c.notNull())
        .addColumn('completed_at', text, (c) => c.notNull().defaultTo(''))
        .execute();
      await db.schema.createIndex('carve_files_query').on('carve_files').column('query_id').execute();

      await T('audit_logs')
        .addColumn('created_at', text, (c) => c.notNull())
        .addColumn('env_uuid', text, (c) => c.notNull().defaultTo(''))
        .addColumn('environment_id', int, (c) => c.notNull().defaultTo(0))
        .addColumn('line', text, (c) => c.notNull())
        .addColumn('log_type', int, (c) => c.notNull())
        .addColumn('severity', int, (c) => c.notNull())
        .addColumn('service', text, (c) => c.notNull().defaultTo(''))
        .addColumn('source_ip', text, (c) => c.notNull().defaultTo(''))
        .addColumn('username', text, (c) => c.notNull().defaultTo(''))
        .execute();
      await db.schema.createIndex('audit_logs_user').on('audit_logs').columns(['username', 'id']).execute();
      await db.schema.createIndex('audit_logs_service').on('audit_logs').columns(['service', 'id']).execute();
      await db.schema.createIndex('audit_logs_env').on('audit_logs').columns(['environment_id', 'id']).execute();

      await db.schema
        .createTable('server_meta')
        .addColumn('key', text, (c) => c.primaryKey())
        .addColumn('value', text, (c) => c.notNull())
        .execute();
    },
  };
}

/** Issue 9: aggregated denial rows carry a count; addresses that logged in to an account. */
function trust(): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .alterTable('audit_logs')
        .addColumn('count', int, (c) => c.notNull().defaultTo(1))
        .execute();
      await db.schema
        .createTable('login_addresses')
        .addColumn('user_id', int, (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('source_ip', text, (c) => c.notNull())
        .addColumn('last_login_at', text, (c) => c.notNull())
        .addPrimaryKeyConstraint('login_addresses_pk', ['user_id', 'source_ip'])
        .execute();
    },
  };
}

/**
 * 004_agents (named like 001_initial and perf's 003_perf: Kysely runs migrations in name order,
 * and "0004" would sort before "001"). Agents (issue 13): which node owes an answer to which live query, the answers, and the carve
 * blocks as they arrive. Blocks are kept as base64 text (as osquery sends them) so the same
 * rows work on SQLite and PostgreSQL.
 */
function agents(dialect: Dialect): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('node_queries')
        .addColumn('query_id', int, (c) => c.notNull())
        .addColumn('node_id', int, (c) => c.notNull())
        .addColumn('status', text, (c) => c.notNull().defaultTo('pending'))
        .addPrimaryKeyConstraint('node_queries_pk', ['query_id', 'node_id'])
        .execute();
      await db.schema.createIndex('node_queries_node').on('node_queries').columns(['node_id', 'status']).execute();
      await withId(db.schema.createTable('query_results') as CreateTableBuilder<string, never>, dialect)
        .addColumn('query_id', int, (c) => c.notNull())
        .addColumn('node_id', int, (c) => c.notNull())
        .addColumn('node_uuid', text, (c) => c.notNull())
        .addColumn('hostname', text, (c) => c.notNull().defaultTo(''))
        .addColumn('status', int, (c) => c.notNull().defaultTo(0))
        .addColumn('error', text, (c) => c.notNull().defaultTo(''))
        .addColumn('rows', text, (c) => c.notNull().defaultTo('[]'))
        .addColumn('created_at', text, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('query_results_query').on('query_results').columns(['query_id', 'id']).execute();
      await db.schema
        .createTable('carve_blocks')
        .addColumn('session_id', text, (c) => c.notNull())
        .addColumn('block_id', int, (c) => c.notNull())
        .addColumn('data', text, (c) => c.notNull())
        .addPrimaryKeyConstraint('carve_blocks_pk', ['session_id', 'block_id'])
        .execute();
      // The agent door finds the node of every request by its key.
      await db.schema.createIndex('nodes_node_key').on('nodes').column('node_key').execute();
      await db.schema.createIndex('carve_files_session').on('carve_files').column('session_id').execute();
    },
  };
}

/**
 * 005_shared_state (issue 14): what replicas must agree on and used to count in memory. Rate-limit
 * windows (login per address, denied per address, API per user, failed logins per account), and
 * the audit row each denial window aggregates into, so two replicas never write two rows.
 */
function sharedState(): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('rate_windows')
        .addColumn('scope', text, (c) => c.notNull())
        .addColumn('key', text, (c) => c.notNull())
        .addColumn('window_start', big, (c) => c.notNull())
        .addColumn('count', int, (c) => c.notNull().defaultTo(0))
        .addPrimaryKeyConstraint('rate_windows_pk', ['scope', 'key'])
        .execute();
      await db.schema.createIndex('rate_windows_start').on('rate_windows').column('window_start').execute();
      await db.schema
        .createTable('denial_windows')
        .addColumn('source_ip', text, (c) => c.notNull())
        .addColumn('username', text, (c) => c.notNull())
        .addColumn('window_start', big, (c) => c.notNull())
        .addColumn('audit_id', int, (c) => c.notNull())
        .addPrimaryKeyConstraint('denial_windows_pk', ['source_ip', 'username'])
        .execute();
      await db.schema.createIndex('denial_windows_start').on('denial_windows').column('window_start').execute();
    },
  };
}

/**
 * 007_osquery_config (issue 22): when each node last fetched its configuration (its hash is
 * `config_hash`), and the options part stored as osquery reads it (the options object itself,
 * as osctrl stores it) instead of the {"options": {...}} of older rows.
 */
function osqueryConfig(): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('nodes').addColumn('config_fetched_at', text).execute();
      const envs = (await db.selectFrom('environments').select(['id', 'options']).execute()) as { id: number; options: string }[];
      for (const e of envs) {
        let v: unknown;
        try {
          v = JSON.parse(e.options || '{}');
        } catch {
          continue;
        }
        const o = v as Record<string, unknown>;
        if (
          o &&
          typeof o === 'object' &&
          Object.keys(o).length === 1 &&
          o.options &&
          typeof o.options === 'object' &&
          !Array.isArray(o.options)
        ) {
          await db
            .updateTable('environments')
            .set({ options: JSON.stringify(o.options) })
            .where('id', '=', e.id)
            .execute();
        }
      }
    },
  };
}

/**
 * 008_carve_sessions (issue 18): carve_files was keyed by the node's UUID, so a node could be
 * carved once, ever (a second carve hit the primary key). Rebuilt with an id of its own: any
 * number of carves and sessions per node, the session id unique (it is the agent's credential
 * for its blocks), and the archive's sha256 kept once computed (downloads stream, so the header
 * cannot be computed from bytes in memory any more).
 */
function carveSessions(dialect: Dialect): Migration {
  return {
    async up(db: Kysely<any>) {
      await withId(db.schema.createTable('carve_files_new') as CreateTableBuilder<string, never>, dialect)
        .addColumn('uuid', text, (c) => c.notNull())
        .addColumn('query_id', int, (c) => c.notNull().references('queries.id').onDelete('cascade'))
        .addColumn('carve_id', text, (c) => c.notNull())
        .addColumn('session_id', text, (c) => c.notNull())
        .addColumn('path', text, (c) => c.notNull())
        .addColumn('status', text, (c) => c.notNull())
        .addColumn('archived', int, (c) => c.notNull().defaultTo(0))
        .addColumn('block_size', big, (c) => c.notNull().defaultTo(0))
        .addColumn('carve_size', big, (c) => c.notNull().defaultTo(0))
        .addColumn('total_blocks', int, (c) => c.notNull().defaultTo(0))
        .addColumn('completed_blocks', int, (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', text, (c) => c.notNull())
        .addColumn('completed_at', text, (c) => c.notNull().defaultTo(''))
        .addColumn('sha256', text, (c) => c.notNull().defaultTo(''))
        .execute();
      const cols = [
        'uuid',
        'query_id',
        'carve_id',
        'session_id',
        'path',
        'status',
        'archived',
        'block_size',
        'carve_size',
        'total_blocks',
        'completed_blocks',
        'created_at',
        'completed_at',
      ];
      await db
        .insertInto('carve_files_new')
        .columns(cols)
        .expression(db.selectFrom('carve_files').select(cols).orderBy('created_at'))
        .execute();
      await db.schema.dropTable('carve_files').execute();
      await db.schema.alterTable('carve_files_new').renameTo('carve_files').execute();
      await db.schema.createIndex('carve_files_query').on('carve_files').columns(['query_id', 'created_at']).execute();
      await db.schema.createIndex('carve_files_session').unique().on('carve_files').column('session_id').execute();
      await db.schema.createIndex('carve_files_node').on('carve_files').columns(['uuid', 'status']).execute();
    },
  };
}

/**
 * 009_health_filters (issue 20): `nodes list --health/--risk` and live-query targets by health,
 * risk and status read one index: every input of the derived health (node-filters.ts) is in it,
 * led by the environment and last_seen (the two activity cutoffs are ranges on it), so a count
 * never touches the table.
 */
function healthFilters(dialect: Dialect): Migration {
  return {
    async up(db: Kysely<any>) {
      const seen = dialect === 'postgres' ? 'last_seen nulls first' : 'last_seen';
      await sql.raw(`create index nodes_env_health on nodes (environment_id, ${seen}, config_valid, osquery_version_key)`).execute(db);
    },
  };
}

export function migrationProvider(dialect: Dialect): MigrationProvider {
  return {
    getMigrations: async () => ({
      '001_initial': initial(dialect),
      '002_trust': trust(),
      '003_perf': perfMigration(dialect),
      '004_agents': agents(dialect),
      '005_shared_state': sharedState(),
      // Counters for the per-request caches of callers, environments and settings (issue 11).
      '006_request_caches': { up: (db: Kysely<any>) => createRequestCacheCounters(db, dialect) },
      '007_osquery_config': osqueryConfig(),
      '008_carve_sessions': carveSessions(dialect),
      '009_health_filters': healthFilters(dialect),
      // Indexes for every filter and sort of the node and audit lists at fleet size (issue 21).
      '010_list_indexes': listIndexesMigration(dialect),
      // Counters the agent door's caches are keyed by (issue 21).
      '011_agent_counters': agentCountersMigration(dialect),
      // Carves matched by the ids a real osquery sends; refusals and compression kept (issue 26).
      '012_carve_ids': carveIdsMigration(),
      // Each node's own distributed interval; no host_identifier in the default options (issue 26).
      '013_agent_cadence': agentCadenceMigration(),
      // The durable log spool, its streams and the sinks' cursors (issue 28).
      '014_log_spool': spoolMigration(dialect),
      // What an environment follows of the server, and nodes' detail refresh (issue 27).
      '015_production': productionMigration(),
      // Logs and query reports at the terminal (issue 30): on the spool of 014_log_spool.
      '016_logs': logsMigration(),
      // What each check-in changes, in a narrow table of its own (issue 31).
      '017_node_seen': nodeSeenMigration(dialect),
      // The change counters locked in one order: no deadlock between two writers (issue 29).
      '018_counter_lock_order': counterLockOrderMigration(dialect),
      // The content counter moved by an update of nodes only when it changed a row (issue 31).
      '019_content_on_change': contentOnChangeMigration(dialect),
      // The running carves' counter: a carve file added, removed or its status changed (issue 31).
      '020_carve_files_counter': carveFilesCounterMigration(dialect),
    }),
  };
}
