// Hidden developer commands (not in --help, completions or man pages). `dev agents` runs the
// agent simulator: N synthetic osquery agents enrolled with an environment's real flags and
// secret, speaking the TLS remote API, until --duration passes or Ctrl-C/SIGTERM.
import type { Command } from 'commander';
import { readFile } from 'node:fs/promises';
import { verb, intArg } from '../define.js';
import { parseDuration } from '../../lib/duration.js';
import { CliError, ExitCode, UsageError } from '../../errors.js';
import { parseListen } from '../server/options.js';
import { printObject } from '../../output/index.js';

interface AgentsOpts {
  flags: string;
  secretFile?: string;
  certs?: string;
  connect?: string;
  count: number;
  local?: boolean;
  seed: string;
  duration?: string;
  distributedInterval?: string;
  configInterval?: string;
  logInterval?: string;
  recordCarves?: string;
  connections?: number;
  maxInFlight?: number;
}

export function registerDev(program: Command): void {
  const dev = program.command('dev', { hidden: true }).description('Developer tools (hidden)');
  verb<AgentsOpts>(
    dev,
    {
      name: 'agents',
      summary: 'Run simulated osquery agents against a server',
      description:
        'Enroll N synthetic osquery agents with the flags file of an environment (fleetctl enroll show ENV flags)\n' +
        "and its enroll secret, then check in at the flags' intervals over TLS: config, status and result logs\n" +
        '(gzip when --logger_tls_compress=true), distributed queries answered with plausible rows, carves uploaded.\n' +
        'Runs until --duration passes or Ctrl-C/SIGTERM; prints a summary (latencies per request kind).',
      examples: [
        'fleetctl enroll show prod flags > /tmp/prod.flags && fleetctl enroll show prod secret > /tmp/prod.secret',
        'fleetctl dev agents --flags /tmp/prod.flags --secret-file /tmp/prod.secret --certs /tmp/agent.crt --count 50',
        'fleetctl dev agents --flags /tmp/prod.flags --secret-file /tmp/prod.secret --insecure --local --distributed-interval 2s',
      ],
    },
    (cmd) =>
      cmd
        .requiredOption('--flags <file>', 'osquery flags file (- for stdin)')
        .option('--secret-file <file>', "enroll secret (default: the flags' --enroll_secret_path)")
        .option('--certs <file>', "CA / server certificate PEM (default: the flags' --tls_server_certs)")
        .option('--connect <host:port>', 'connect here instead of --tls_hostname (loopback only)')
        .option('--count <n>', 'number of agents', intArg(1), 1)
        .option('--local', 'one agent that is this machine: its hostname, and real files for carves')
        .option('--seed <text>', 'names the synthetic fleet (same seed, same UUIDs and hostnames)', 'fleetctl-sim')
        .option('--duration <duration>', 'stop after this long (default: until Ctrl-C)')
        .option('--distributed-interval <duration>', 'override --distributed_interval')
        .option('--config-interval <duration>', 'override --config_tls_refresh')
        .option('--log-interval <duration>', 'override --logger_tls_period')
        .option('--record-carves <dir>', 'write each uploaded carve archive to DIR/<query>_<uuid>.tar')
        .option('--connections <n>', 'TLS connections shared by the agents', intArg(1))
        .option('--max-in-flight <n>', 'requests in flight at most', intArg(1)),
    async (ctx, _args, o) => {
      const { parseAgentFlags, FlagsError, Simulator } = await import('../../agent-sim/index.js');
      if (o.local && o.count > 1) throw new UsageError('--local is one agent (this machine): leave out --count');
      const read = async (file: string, what: string) => {
        // The generic flags carry osctrl's placeholders where an install script puts real paths.
        if (/^__[A-Z_]+__$/.test(file)) {
          throw new UsageError(
            `the flags name no file for ${what} (${file})`,
            `pass ${what === 'the enroll secret' ? '--secret-file FILE (fleetctl enroll show ENV secret > FILE)' : '--certs FILE (fleetctl enroll show ENV cert > FILE), or --insecure'}`,
          );
        }
        try {
          return file === '-' ? await readStdin(ctx.io.stdin) : await readFile(file, 'utf8');
        } catch (e) {
          throw new UsageError(`cannot read ${what} ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
        }
      };
      let flags;
      try {
        flags = parseAgentFlags(await read(o.flags, 'the flags file'));
      } catch (e) {
        if (e instanceof FlagsError) throw new UsageError(`${o.flags}: ${e.message}`);
        throw e;
      }
      const secretFile = o.secretFile ?? flags.enrollSecretPath;
      if (!secretFile) throw new UsageError('no enroll secret: pass --secret-file (the flags have no --enroll_secret_path)');
      const secret = (await read(secretFile, 'the enroll secret')).trim();
      const certFile = o.certs ?? (ctx.globals.insecure ? undefined : flags.serverCerts);
      const ca = certFile ? await read(certFile, 'the certificate') : undefined;
      const connect = o.connect ? parseListen(o.connect) : undefined;
      const target = connect ?? flags;
      if (!isLoopback(target.host))
        throw new UsageError(`the simulator talks to loopback servers only; ${target.host} is not (use --connect 127.0.0.1:PORT)`);
      const ms = (v: string | undefined) => (v === undefined ? undefined : parseDuration(v));
      const duration = ms(o.duration);
      const sim = new Simulator({
        flags,
        secret,
        seed: o.seed,
        ca,
        insecure: ctx.globals.insecure,
        connect,
        intervals: { distributed: ms(o.distributedInterval), config: ms(o.configInterval), log: ms(o.logInterval) },
        local: o.local,
        recordDir: o.recordCarves,
        connections: o.connections ?? Math.min(64, o.count),
        maxInFlight: o.maxInFlight,
        spread: o.count > 1,
        log: (line) => ctx.io.err(`${line}\n`),
      });
      ctx.io.err(
        `Starting ${o.count} simulated agent${o.count === 1 ? '' : 's'} against https://${flags.host}:${flags.port}${connect ? ` (via ${connect.host}:${connect.port})` : ''}\n`,
      );
      const started = Date.now();
      sim.add(o.count);
      let announced = false;
      await new Promise<void>((resolve) => {
        const finish = () => {
          clearInterval(watch);
          process.off('SIGINT', finish);
          process.off('SIGTERM', finish);
          resolve();
        };
        const watch = setInterval(() => {
          const n = sim.enrolled;
          if (!announced && n + sim.gaveUp >= o.count) {
            announced = true;
            ctx.io.err(`Enrolled ${n}/${o.count} agents in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
          }
          if (sim.gaveUp >= o.count) finish();
          if (duration !== undefined && Date.now() - started >= duration) finish();
        }, 100);
        process.once('SIGINT', finish);
        process.once('SIGTERM', finish);
      });
      await sim.stop();
      const summary = {
        agents: o.count,
        enrolled: sim.enrolled,
        gave_up: sim.gaveUp,
        seconds: Math.round((Date.now() - started) / 100) / 10,
        queries_answered: sim.answered,
        scheduled_query_runs: sim.scheduledRuns,
        carves_uploaded: sim.carves,
        requests: sim.stats.summary(),
        last_error: sim.stats.lastError ?? '',
      };
      if (ctx.wantsData()) await printObject(ctx.io, ctx.output(), summary);
      else
        ctx.io.err(
          `Stopped: ${summary.enrolled}/${summary.agents} enrolled, ${summary.queries_answered} queries answered, ${summary.carves_uploaded} carves uploaded` +
            `${summary.requests.checkin ? `, check-in p99 ${summary.requests.checkin.p99_ms} ms` : ''}${summary.last_error ? `; last error: ${summary.last_error}` : ''}\n`,
        );
      if (sim.gaveUp >= o.count) throw new CliError(`no agent could enroll: ${sim.stats.lastError ?? 'unknown error'}`, ExitCode.error);
    },
  );
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

async function readStdin(stdin: NodeJS.ReadableStream): Promise<string> {
  let s = '';
  for await (const chunk of stdin) s += String(chunk);
  return s;
}
