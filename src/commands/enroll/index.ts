import { reportChange } from '../report.js';
import { Argument, type Command } from 'commander';
import { group, verb } from '../define.js';
import { EnrollTargets } from '../../api/constants.js';
import type { EnrollAction, EnrollBody, EnrollTarget } from '../../api/index.js';
import { UsageError } from '../../errors.js';
import { isNever, printObject, relativeTime, safeText } from '../../output/index.js';
import { readInput } from '../read-input.js';
import { confirmDestructive } from '../confirm.js';
import type { Context } from '../../context.js';
import type { FleetApi } from '../../client/index.js';

interface LifecycleSpec {
  action: Extract<EnrollAction, 'extend' | 'expire' | 'rotate' | 'notexpire'>;
  summary: string;
  description: string;
  /** Set for actions that break existing enrol commands: they ask first (or need --yes). */
  confirm?: (env: string) => string;
}

const LIFECYCLE: LifecycleSpec[] = [
  {
    action: 'extend',
    summary: 'Let nodes enrol for the next 24 hours',
    description: 'Set the enrollment of the environment to expire 24 hours from now (the secret stays the same).',
  },
  {
    action: 'expire',
    summary: 'Stop enrollment now',
    description:
      'Expire the enrollment of the environment now: new nodes can no longer enrol until it is extended. Asks for confirmation at a terminal; needs --yes otherwise.',
    confirm: (env) => `Expire enrollment of ${env} now (new nodes cannot enrol)?`,
  },
  {
    action: 'rotate',
    summary: 'Issue a new enroll secret and secret path (the old ones stop working)',
    description:
      'Rotate the enroll secret and the secret path of the environment and open enrollment for 24 hours. ' +
      'Install scripts and flags files fetched before stop working. Asks for confirmation at a terminal; ' +
      'needs --yes otherwise.',
    confirm: (env) => `Rotate the enroll secret of ${env} (existing enroll scripts and flags stop working)?`,
  },
  {
    action: 'notexpire',
    summary: 'Let nodes enrol with no expiry',
    description: 'Make the enrollment of the environment never expire.',
  },
];

/** Where enrollment stands, in one line with the right tense: open until, expired at, or never expires. */
export function enrollmentState(name: string, expire: string, now = new Date()): string {
  if (isNever(expire)) return `Enrollment of ${name} is open and never expires.`;
  if (Date.parse(expire) > now.getTime()) return `Enrollment of ${name} is open until ${expire} (${relativeTime(expire, now)}).`;
  return `Enrollment of ${name} expired at ${expire} (${relativeTime(expire, now)}): new nodes cannot enrol until \`fleetctl enroll extend ${name}\`.`;
}

/**
 * After a change: one line on stderr saying where enrollment now stands (read back from the
 * server, so the line is the stored state, not the request), or an object for -o/--jq.
 */
async function report(ctx: Context, api: FleetApi, env: string, action: LifecycleSpec['action'], message: string): Promise<void> {
  const e = await api.environments.get(env);
  const state = enrollmentState(e.name, e.enroll_expire);
  const human = action === 'rotate' ? `New enroll secret for ${e.name}. ${state}` : state;
  await reportChange(ctx, human, () => ({ name: e.name, uuid: e.uuid, enroll_expire: e.enroll_expire, message }));
}

/** Targets that only work while enrollment is open: showing them for a closed one warns. */
const ENROLLING_TARGETS: ReadonlySet<string> = new Set([
  'secret',
  'flags',
  'flagsLinux',
  'flagsMac',
  'flagsWindows',
  'flagsFreeBSD',
  'enroll.sh',
  'enroll.ps1',
]);

/** Exactly one trailing newline, so `fleetctl enroll show prod enroll.sh | sh` gets a clean script. */
export function scriptText(data: string): string {
  return `${data.replace(/\n+$/, '')}\n`;
}

export function registerEnroll(program: Command): void {
  const enroll = group(program, {
    name: 'enroll',
    summary: 'Enrollment of nodes: expiry, secret rotation, packages, install scripts',
    description:
      'Manage how nodes enrol into an environment (needs env admin). Every verb names the environment ' +
      'explicitly: these values are what agents use to join it.',
    examples: [
      'fleetctl enroll show prod enroll.sh | sh',
      'fleetctl enroll extend prod',
      'fleetctl enroll rotate prod --yes',
      'fleetctl enroll update prod --certificate ./fleet.pem --deb-url https://pkg.example.com/osquery.deb',
    ],
  });

  for (const spec of LIFECYCLE) {
    verb<{ yes?: boolean }>(
      enroll,
      {
        name: spec.action,
        summary: spec.summary,
        description: spec.description,
        examples: spec.confirm
          ? [`fleetctl enroll ${spec.action} prod`, `fleetctl enroll ${spec.action} staging --yes`]
          : [`fleetctl enroll ${spec.action} prod`, `fleetctl enroll ${spec.action} staging -o json`],
      },
      (cmd) => {
        cmd.argument('<env>', 'environment name or UUID');
        if (spec.confirm) cmd.option('-y, --yes', 'do not ask for confirmation');
      },
      async (ctx, [env], o) => {
        if (spec.confirm) await confirmDestructive(ctx, o.yes, spec.confirm(env));
        const api = await ctx.api();
        const res = await api.environments.enrollAction(env, spec.action);
        await report(ctx, api, env, spec.action, res.message);
      },
    );
  }

  verb<{ certificate?: string; debUrl?: string; rpmUrl?: string; msiUrl?: string; pkgUrl?: string }>(
    enroll,
    {
      name: 'update',
      summary: 'Set the certificate and package URLs that enroll scripts use',
      description:
        "Set the certificate agents trust (PEM file; - reads stdin: the root of the server's chain, written to " +
        '--tls_server_certs by the scripts) and the package URLs (https:// URLs or bare file names) of the install ' +
        "scripts. Only the values given change. A certificate given here is this environment's own, kept when the " +
        "server's trust anchor changes; an empty file makes the environment follow the server's anchor again.",
      examples: [
        'fleetctl enroll update prod --certificate ./fleet.pem',
        'fleetctl enroll update prod --deb-url https://pkg.example.com/osquery.deb --rpm-url https://pkg.example.com/osquery.rpm',
        'fleetctl enroll update prod --msi-url osquery.msi --pkg-url osquery.pkg',
      ],
    },
    (cmd) =>
      cmd
        .argument('<env>', 'environment name or UUID')
        .option('--certificate <file>', 'PEM certificate file (- for stdin)')
        .option('--deb-url <url>', 'Debian package URL')
        .option('--rpm-url <url>', 'RPM package URL')
        .option('--msi-url <url>', 'Windows MSI package URL')
        .option('--pkg-url <url>', 'macOS package URL'),
    async (ctx, [env], o) => {
      const body: EnrollBody = {};
      if (o.debUrl !== undefined) body.url_deb_pkg = o.debUrl;
      if (o.rpmUrl !== undefined) body.url_rpm_pkg = o.rpmUrl;
      if (o.msiUrl !== undefined) body.url_msi_pkg = o.msiUrl;
      if (o.pkgUrl !== undefined) body.url_mac_pkg = o.pkgUrl;
      if (o.certificate === undefined && Object.keys(body).length === 0) {
        throw new UsageError('nothing to change: pass at least one of --certificate, --deb-url, --rpm-url, --msi-url, --pkg-url');
      }
      if (o.certificate !== undefined) body.certificate = await readInput(ctx.io, o.certificate, '--certificate');
      const api = await ctx.api();
      const res = await api.environments.enrollAction(env, 'update', body);
      if (ctx.wantsData()) {
        const e = await api.environments.get(env);
        await printObject(ctx.io, ctx.output(), {
          name: e.name,
          uuid: e.uuid,
          deb_package: e.deb_package,
          rpm_package: e.rpm_package,
          msi_package: e.msi_package,
          pkg_package: e.pkg_package,
          message: res.message,
        });
      } else ctx.io.err(`${safeText(res.message)}\n`);
    },
  );

  verb(
    enroll,
    {
      name: 'show',
      aliases: ['get'],
      summary: 'Print an enrollment value: secret, certificate, flags or an install script',
      description:
        'Print one enrollment value of the environment as text on stdout (with exactly one final newline), ' +
        'ready to pipe: the enroll secret, the certificate, the flags file for an OS, or a one-line ' +
        'install/remove script. -o json prints the API object ({"data": ...}).\n\nTargets: ' +
        `${EnrollTargets.join(', ')}.\n\n` +
        'The flags file to put on a host is flagsLinux, flagsMac, flagsWindows or flagsFreeBSD: the secret and ' +
        "certificate paths of that OS filled in. flags is osctrl's generic template, whose __SECRET_FILE__ and " +
        '__CERT_FILE__ the install scripts replace; printing it says so on stderr.',
      examples: [
        'fleetctl enroll show prod enroll.sh | sh',
        'fleetctl enroll show prod enroll.ps1 > enroll.ps1',
        'fleetctl enroll show prod flagsLinux > /etc/osquery/osquery.flags',
        'fleetctl enroll show prod secret',
      ],
    },
    (cmd) =>
      cmd
        .argument('<env>', 'environment name or UUID')
        .addArgument(new Argument('<target>', 'what to print').choices(EnrollTargets as unknown as string[])),
    async (ctx, [env, target]) => {
      const api = await ctx.api();
      const [res, e] = await Promise.all([
        api.environments.enrollRead(env, target as EnrollTarget),
        ENROLLING_TARGETS.has(target) ? api.environments.get(env) : undefined,
      ]);
      if (e && !isNever(e.enroll_expire) && Date.parse(e.enroll_expire) <= Date.now()) {
        ctx.io.err(`warning: ${enrollmentState(e.name, e.enroll_expire)}\n`);
      }
      if (ctx.wantsData()) await printObject(ctx.io, ctx.output(), res);
      else if (res.data === '') ctx.io.err(`${target} of ${env} is empty\n`);
      else ctx.io.out(scriptText(res.data));
      // The generic template is not a file to use as is (issue 29): say what fills its placeholders.
      if (target === 'flags' && /__(SECRET|CERT)_FILE__/.test(res.data)) {
        ctx.io.err(
          'note: these are the generic flags: __SECRET_FILE__ and __CERT_FILE__ stand for paths the install scripts fill in; the flags file for a host is flagsLinux, flagsMac, flagsWindows or flagsFreeBSD\n',
        );
      }
    },
  );
}
