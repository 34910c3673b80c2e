import { reportChange } from '../report.js';
import { Option, type Command } from 'commander';
import { group, verb } from '../define.js';
import { AccessLevels } from '../../api/constants.js';
import type { User, UserBody } from '../../api/index.js';
import { CliError, ExitCode, UsageError } from '../../errors.js';
import { printObject, printList, safeText } from '../../output/index.js';
import { confirmDestructive } from '../confirm.js';
import type { Context } from '../../context.js';
import type { FleetApi } from '../../client/index.js';
import { USER_COLUMNS, userDetailColumns } from './columns.js';
import { readNewPassword } from './secrets.js';
import { registerPasswd } from './passwd.js';

interface UserFlags {
  email?: string;
  fullname?: string;
  environment?: string[];
  level?: LevelChoice[];
  admin?: boolean;
  service?: boolean;
  api?: boolean;
  passwordStdin?: boolean;
  setPassword?: boolean;
}

/** Repeatable and comma-separated: `--environment prod,staging --environment dev`. */
function collect(v: string, prev: string[] | undefined): string[] {
  return [
    ...(prev ?? []),
    ...v
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  ];
}

/** `none` revokes access to the environments given; it cannot be combined with a level. */
const LEVEL_CHOICES = [...AccessLevels, 'none'] as const;
type LevelChoice = (typeof LEVEL_CHOICES)[number];

function collectLevel(v: string, prev: LevelChoice[] | undefined): LevelChoice[] {
  const out = [...(prev ?? [])];
  for (const l of v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    if (!(LEVEL_CHOICES as readonly string[]).includes(l))
      throw new UsageError(`invalid --level "${l}"; valid: ${LEVEL_CHOICES.join(', ')}`);
    if (!out.includes(l as LevelChoice)) out.push(l as LevelChoice);
  }
  if (out.includes('none') && out.length > 1) throw new UsageError('--level none (revoke access) cannot be combined with other levels');
  return out;
}

function userFlags(cmd: Command, mode: 'add' | 'edit'): Command {
  return cmd
    .argument('<username>', 'user name')
    .option('--email <address>', 'e-mail address')
    .option('--fullname <name>', 'full name')
    .option('--environment <env>', 'environment (name or UUID) to grant access to; repeatable or comma-separated', collect)
    .addOption(
      new Option(
        '--level <level>',
        `access level on those environments: ${AccessLevels.join(', ')}${mode === 'edit' ? ', or none to revoke access' : ''}; repeatable or comma-separated (default: user)`,
      ).argParser(collectLevel),
    )
    .option('--admin', 'make a super-admin (all environments, all actions)')
    .option('--no-admin', mode === 'add' ? 'not a super-admin (the default)' : 'remove super-admin rights')
    .option('--service', 'mark as a service account')
    .option('--no-service', mode === 'add' ? 'not a service account (the default)' : 'clear the service-account mark')
    .option('--api', mode === 'add' ? 'may log in and use the API (the default)' : 'allow logging in and API use again')
    .option(
      '--no-api',
      mode === 'add'
        ? "may not log in or use the API (the server's only door)"
        : "disallow logging in and API use: ends the user's sessions, their tokens answer 403",
    )
    .option(
      '--password-stdin',
      mode === 'add' ? 'read the password from standard input (else prompted twice)' : 'read a new password from standard input',
    );
}

/** The 4.5 body for the flags given; what is not given is not sent (edit keeps it). */
export function userBody(o: UserFlags, mode: 'add' | 'edit'): Omit<UserBody, 'username'> {
  const body: Omit<UserBody, 'username'> = {};
  if (o.fullname !== undefined) body.fullname = o.fullname;
  if (o.email !== undefined) body.email = o.email;
  if (o.level?.includes('none') && mode === 'add')
    throw new UsageError('--level none only makes sense for `users edit` (it revokes access)');
  if (o.level?.length && !o.environment?.length)
    throw new UsageError('--level applies to the environments given with --environment: pass --environment ENV too');
  if (o.environment?.length) {
    body.environments = o.environment;
    if (o.level?.length) {
      body.user_access = o.level.includes('user');
      body.query_access = o.level.includes('query');
      body.carve_access = o.level.includes('carve');
      body.admin_access = o.level.includes('admin');
    }
  }
  if (o.admin === true) body.admin = true;
  if (o.admin === false && mode === 'edit') body.not_admin = true;
  if (o.service === true) body.service = true;
  if (o.service === false && mode === 'edit') body.not_service = true;
  if (o.api !== undefined) body.api = o.api;
  return body;
}

/** Users by name from GET /api/v1/users: there is no single-user read endpoint. */
export async function findUser(api: FleetApi, username: string): Promise<User> {
  const user = (await api.users.list()).find((u) => u.username === username);
  if (!user) throw new CliError(`user "${username}" not found`, ExitCode.notFound, 'run `fleetctl users list` to see the user names');
  return user;
}

/** After a change: the server's message on stderr, or the user as it now is for -o/--jq. */
function reportUser(ctx: Context, api: FleetApi, username: string, message: string): Promise<void> {
  return reportChange(ctx, `${capitalize(message)}.`, () => findUser(api, username), userDetailColumns(ctx.serverFlavor()));
}

const capitalize = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

export function registerUsers(program: Command): void {
  const users = group(program, {
    name: 'users',
    summary: 'Manage API users, their access and your own password',
    description:
      'Manage API users (super-admins only, except `users me` and `users passwd`). ' +
      'Access: --admin makes a super-admin; --environment ENV with --level LEVEL grants per-environment ' +
      `levels (${AccessLevels.join(', ')}; an env admin also has query and carve).`,
    examples: [
      'fleetctl users list',
      'fleetctl users show alice -o json',
      'fleetctl users add alice --email alice@example.com --environment prod --level query',
      'fleetctl users edit alice --environment staging --level admin',
      'fleetctl users remove alice --yes',
      'fleetctl users passwd',
    ],
  });

  registerUsersReads(users);

  registerUsersChanges(users);

  registerPasswd(users);
}

function registerUsersReads(users: Command): void {
  verb(
    users,
    {
      name: 'list',
      watch: true,
      aliases: ['ls'],
      summary: 'List users with their access levels and second factors',
      examples: ['fleetctl users list', 'fleetctl users list -o json', "fleetctl users list --jq '.[] | select(.admin) | .username'"],
    },
    () => {},
    async (ctx) => {
      const api = await ctx.api();
      const list = await api.users.list();
      await printList(
        ctx.io,
        ctx.output(),
        [...list].sort((a, b) => a.username.localeCompare(b.username)),
        USER_COLUMNS,
      );
    },
  );

  verb(
    users,
    {
      name: 'show',
      aliases: ['get'],
      summary: 'Show one user',
      description: 'Show one user: flags, per-environment access, second factors, last login. Exits 3 when there is no such user.',
      examples: ['fleetctl users show alice', 'fleetctl users show alice -o json', 'fleetctl users show alice --jq .environments'],
    },
    (cmd) => cmd.argument('<username>', 'user name'),
    async (ctx, [username]) => {
      const api = await ctx.api();
      await printObject(ctx.io, ctx.output(), await findUser(api, username), userDetailColumns(ctx.serverFlavor()));
    },
  );

  verb(
    users,
    {
      name: 'me',
      aliases: ['whoami'],
      summary: 'Show the user you are logged in as',
      examples: ['fleetctl users me', 'fleetctl users me --jq .mfa'],
    },
    () => {},
    async (ctx) => {
      const api = await ctx.api();
      await printObject(ctx.io, ctx.output(), await api.users.me(), userDetailColumns(ctx.serverFlavor()));
    },
  );
}

function registerUsersChanges(users: Command): void {
  verb<UserFlags>(
    users,
    {
      name: 'add',
      aliases: ['create'],
      summary: 'Create a user',
      description:
        'Create a user. The password is prompted for twice at a terminal, or read from stdin with ' +
        '--password-stdin; it is never taken as an argument. --environment (repeatable) grants access to ' +
        'environments, at the --level(s) given (default: user, read-only). --admin makes a super-admin.',
      examples: [
        'fleetctl users add alice --fullname "Alice Doe" --email alice@example.com --environment prod',
        'fleetctl users add bob --environment prod,staging --level query --level carve',
        'printf %s "$PW" | fleetctl users add ci-deploy --service --environment prod --level admin --password-stdin',
        'fleetctl users add root2 --admin',
      ],
    },
    (cmd) => userFlags(cmd, 'add'),
    async (ctx, [username], o) => {
      const body = userBody(o, 'add');
      const api = await ctx.api();
      body.password = await readNewPassword(ctx, o.passwordStdin, username);
      const res = await api.users.action(username, 'add', body);
      await reportUser(ctx, api, username, res.data);
    },
  );

  verb<UserFlags>(
    users,
    {
      name: 'edit',
      aliases: ['update'],
      summary: "Change a user's details, access, flags or password",
      description:
        'Change what the flags say; everything else stays. --environment ENV --level L sets the levels on ' +
        'those environments, replacing the levels the user had there (--environment alone grants user level; ' +
        '--level none revokes access to them). Access to other environments is kept. --no-admin / --no-service clear the ' +
        'flags. A new password (--set-password prompts twice; --password-stdin reads it) ends the ' +
        "user's sessions.",
      examples: [
        'fleetctl users edit alice --email alice@new.example.com',
        'fleetctl users edit alice --environment prod --level admin',
        'fleetctl users edit alice --no-admin',
        'fleetctl users edit alice --environment staging --level none',
        'fleetctl users edit alice --set-password',
        'printf %s "$PW" | fleetctl users edit ci-deploy --password-stdin',
      ],
    },
    (cmd) =>
      userFlags(cmd, 'edit').addOption(new Option('--set-password', 'set a new password, prompted twice').conflicts('passwordStdin')),
    async (ctx, [username], o) => {
      const body = userBody(o, 'edit');
      if (o.setPassword && !ctx.io.canPrompt()) throw new UsageError('--set-password prompts at a terminal: use --password-stdin instead');
      if (Object.keys(body).length === 0 && !o.setPassword && !o.passwordStdin) {
        throw new UsageError(
          'nothing to change: pass at least one of --email, --fullname, --environment, --admin/--no-admin, --service/--no-service, --api/--no-api, --set-password, --password-stdin',
        );
      }
      const api = await ctx.api();
      if (o.setPassword || o.passwordStdin) body.password = await readNewPassword(ctx, o.passwordStdin, username);
      const res = await api.users.action(username, 'edit', body);
      await reportUser(ctx, api, username, res.data);
    },
  );

  verb<{ yes?: boolean }>(
    users,
    {
      name: 'remove',
      aliases: ['rm', 'delete'],
      summary: 'Remove a user',
      description: 'Remove a user and end their sessions. Asks for confirmation at a terminal; needs --yes otherwise.',
      examples: ['fleetctl users remove alice', 'fleetctl users remove alice --yes'],
    },
    (cmd) => cmd.argument('<username>', 'user name').option('-y, --yes', 'do not ask for confirmation'),
    async (ctx, [username], o) => {
      await confirmDestructive(ctx, o.yes, `Remove user ${username}?`);
      const api = await ctx.api();
      const res = await api.users.action(username, 'remove');
      if (ctx.wantsData()) await printObject(ctx.io, ctx.output(), { username, removed: true, message: res.data });
      else ctx.io.err(`${safeText(capitalize(res.data))}.\n`);
    },
  );
}
