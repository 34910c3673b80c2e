// The real servers the sink tests deliver to (issue 28), installed once into a cache directory
// outside the repository: Kafka's jars and the OpenSearch / Elasticsearch integration-test zips
// from Maven Central, moto in a Python venv from PyPI, versitygw and our GELF reader built with
// Go. What to install is listed in scripts/test-deps.mjs (the one list); this file only knows how.
// Each peer is installed into a temporary directory renamed into place when complete, so an
// interrupted or concurrent install never leaves a half peer behind; a peer already there is kept.
// The result is a manifest, <dir>/peers.json, that test/helpers/peers/ reads.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Where peers live: $FLEETCTL_PEERS_DIR, else /var/cache/fleetctl-test-peers as root (the JVM
 * peers run as `nobody`, who cannot enter /root), else ~/.cache/fleetctl-test-peers. Never in
 * the repository.
 */
export function peersDir() {
  if (process.env.FLEETCTL_PEERS_DIR) return process.env.FLEETCTL_PEERS_DIR;
  if (process.getuid?.() === 0) return '/var/cache/fleetctl-test-peers';
  return join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'fleetctl-test-peers');
}

/** The manifest of installed peers ({name: {home, bin?, version}}), or undefined. */
export function readManifest(dir = peersDir()) {
  try {
    return JSON.parse(readFileSync(join(dir, 'peers.json'), 'utf8'));
  } catch {
    return undefined;
  }
}

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 1024 * 1024, ...opts });
  if (r.status !== 0) {
    const out = `${r.stdout ?? ''}${r.stderr ?? ''}`.trim().split('\n').slice(-15).join('\n');
    throw new Error(`${cmd} ${args.join(' ')} failed (${r.error?.message ?? `exit ${r.status}`}):\n${out}`);
  }
  return r.stdout;
}

/** A pom whose only job is to name the artifacts Maven should fetch. */
function pom(deps) {
  const d = deps
    .map(
      ([g, a, v, type]) =>
        `<dependency><groupId>${g}</groupId><artifactId>${a}</artifactId><version>${v}</version>${type ? `<type>${type}</type>` : ''}</dependency>`,
    )
    .join('\n    ');
  return `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>fleetctl.test</groupId><artifactId>peers</artifactId><version>0</version><packaging>pom</packaging>
  <dependencies>
    ${d}
  </dependencies>
</project>
`;
}

const INSTALLERS = {
  /** Every runtime jar of a Maven artifact into <home>/libs (Kafka: `java -cp 'libs/*'`). */
  'maven-jars'(peer, home) {
    writeFileSync(join(home, 'pom.xml'), pom([peer.artifact.split(':')]));
    run('mvn', ['-q', '-B', 'dependency:copy-dependencies', '-DoutputDirectory=libs', '-DincludeScope=runtime'], { cwd: home });
    return {};
  },
  /** A distribution zip from Maven, unpacked; its single top folder becomes <home>/dist. */
  'maven-zip'(peer, home) {
    const [g, a, v] = peer.artifact.split(':');
    writeFileSync(join(home, 'pom.xml'), pom([[g, a, v, 'zip']]));
    run('mvn', ['-q', '-B', 'dependency:copy-dependencies', '-DoutputDirectory=zip', '-Dmdep.useBaseVersion=true'], { cwd: home });
    const zip = readdirSync(join(home, 'zip')).find((f) => f.endsWith('.zip'));
    run('unzip', ['-q', join(home, 'zip', zip), '-d', join(home, 'unpacked')]);
    const [top] = readdirSync(join(home, 'unpacked'));
    renameSync(join(home, 'unpacked', top), join(home, 'dist'));
    rmSync(join(home, 'zip'), { recursive: true, force: true });
    rmSync(join(home, 'unpacked'), { recursive: true, force: true });
    return {};
  },
  /**
   * A PyPI package in a venv of its own; bin = the venv's python, run as `bin -m <module>` (the
   * venv's console scripts name the temporary directory in their #! line; its python works
   * wherever the venv is moved).
   */
  pip(peer, home) {
    run('python3', ['-m', 'venv', join(home, 'venv')]);
    run(join(home, 'venv', 'bin', 'python'), ['-m', 'pip', 'install', '-q', '--disable-pip-version-check', peer.requirement]);
    return { bin: join(home, 'venv', 'bin', 'python') };
  },
  /** `go install module@version` into <home>/bin. */
  'go-install'(peer, home) {
    run('go', ['install', peer.module], { env: { ...process.env, GOBIN: join(home, 'bin') } });
    return { bin: join(home, 'bin', peer.bin) };
  },
  /** Our own Go source in the repository, built into <home>/bin. */
  'go-build'(peer, home) {
    run('go', ['build', '-o', join(home, 'bin', peer.bin), '.'], { cwd: join(root, peer.source) });
    return { bin: join(home, 'bin', peer.bin) };
  },
};

/** What identifies an installed peer: its spec, and for our own source, the source's content. */
function fingerprint(peer) {
  const h = createHash('sha256').update(JSON.stringify(peer));
  if (peer.kind === 'go-build') {
    const dir = join(root, peer.source);
    for (const f of readdirSync(dir).sort()) h.update(f).update(readFileSync(join(dir, f)));
  }
  return h.digest('hex').slice(0, 16);
}

/**
 * Installs the peers not yet in the cache (announced in one line first) and writes the manifest.
 * Throws with the failing command's output when one cannot be installed.
 */
export function installPeers(peers, { announce = (line) => process.stderr.write(`${line}\n`) } = {}) {
  const dir = peersDir();
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  const todo = peers.filter((p) => !existsSync(join(dir, `${p.name}-${fingerprint(p)}`, '.complete')));
  if (todo.length > 0) {
    announce(`npm test: installing the sink tests' real peers into ${dir} (once): ${todo.map((p) => p.name).join(', ')}`);
  }
  for (const peer of todo) {
    const final = join(dir, `${peer.name}-${fingerprint(peer)}`);
    const tmp = `${final}.tmp-${process.pid}`;
    rmSync(tmp, { recursive: true, force: true });
    mkdirSync(tmp, { recursive: true });
    const started = Date.now();
    const extra = INSTALLERS[peer.kind](peer, tmp);
    // Paths in the result are written for the final place.
    writeFileSync(join(tmp, '.complete'), JSON.stringify({ ...extra, seconds: (Date.now() - started) / 1000 }).replaceAll(tmp, final));
    try {
      renameSync(tmp, final);
    } catch (err) {
      // Another install finished the same peer first: keep theirs.
      if (!existsSync(join(final, '.complete'))) throw err;
      rmSync(tmp, { recursive: true, force: true });
    }
  }
  const manifest = {};
  for (const peer of peers) {
    const home = join(dir, `${peer.name}-${fingerprint(peer)}`);
    const done = JSON.parse(readFileSync(join(home, '.complete'), 'utf8'));
    manifest[peer.name] = { home, version: peer.version, ...(done.bin ? { bin: done.bin } : {}) };
  }
  const tmpManifest = join(dir, `peers.json.tmp-${process.pid}`);
  writeFileSync(tmpManifest, `${JSON.stringify(manifest, null, 2)}\n`);
  renameSync(tmpManifest, join(dir, 'peers.json'));
  return manifest;
}
