// A real OpenSearch (2.19) or Elasticsearch (8.19), single node on loopback, from the Maven
// Central integration-test zips installed by scripts/test-deps.mjs, for the elastic sink tests.
// Both refuse to run as root: as root they run as `nobody` (through setpriv) with a copy of the
// distribution's config and data/log directories of their own. Heap 512 MiB. Ready when the
// cluster health is yellow (the ES zip has no root-info endpoint: GET / answers 405).
import { appendFileSync, cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PeerProcess, chownTree, freePort, httpOk, requirePeer, tempDir, unprivilegedUser } from './peer.js';

export type SearchKind = 'opensearch' | 'elasticsearch';

export interface SearchServer {
  kind: SearchKind;
  url: string;
  version: string;
  /** Refreshes and returns every document of the indices matching the pattern. */
  documents(pattern: string): Promise<Record<string, unknown>[]>;
  /** The indices matching the pattern. */
  indices(pattern: string): Promise<string[]>;
  stop(): Promise<void>;
  pause(): Promise<void>;
  resume(): Promise<void>;
}

function javaHome(): string {
  return process.env.JAVA_HOME ?? '/usr/lib/jvm/java-17-openjdk-amd64';
}

export async function startSearch(kind: SearchKind): Promise<SearchServer> {
  const peer = requirePeer(kind);
  const user = unprivilegedUser();
  const dir = tempDir(kind);
  const dist = join(peer.home, 'dist');
  cpSync(join(dist, 'config'), join(dir, 'config'), { recursive: true });
  const [http, transport] = [await freePort(), await freePort()];
  const settings = [
    'network.host: 127.0.0.1',
    `http.port: ${http}`,
    `transport.port: ${transport}`,
    'discovery.type: single-node',
    `path.data: ${join(dir, 'data')}`,
    `path.logs: ${join(dir, 'logs')}`,
    'cluster.routing.allocation.disk.threshold_enabled: false',
    ...(kind === 'elasticsearch' ? ['xpack.security.enabled: false', 'xpack.ml.enabled: false'] : []),
  ];
  appendFileSync(join(dir, 'config', `${kind}.yml`), `\n${settings.join('\n')}\n`);
  // The launchers cd to the (root-owned) distribution, and the JVM options write logs/gc.log,
  // logs/hs_err and heap dumps relative to it: point them at our own directory.
  mkdirSync(join(dir, 'logs'));
  mkdirSync(join(dir, 'data'));
  const jvm = join(dir, 'config', 'jvm.options');
  writeFileSync(
    jvm,
    readFileSync(jvm, 'utf8')
      .replaceAll('=logs/', `=${dir}/logs/`)
      .replaceAll(':logs/', `:${dir}/logs/`)
      .replace('HeapDumpPath=data', `HeapDumpPath=${dir}/data`),
  );
  if (user) chownTree(dir, user);
  const url = `http://127.0.0.1:${http}`;
  const opts = '-Xms512m -Xmx512m -XX:TieredStopAtLevel=1';
  const env: Record<string, string> =
    kind === 'opensearch'
      ? { OPENSEARCH_PATH_CONF: join(dir, 'config'), OPENSEARCH_JAVA_OPTS: opts, OPENSEARCH_JAVA_HOME: javaHome(), HOME: dir }
      : { ES_PATH_CONF: join(dir, 'config'), ES_JAVA_OPTS: opts, ES_JAVA_HOME: javaHome(), HOME: dir };
  const proc = new PeerProcess(
    {
      name: kind,
      cmd: join(dist, 'bin', kind),
      args: ['-q'],
      env,
      cwd: dir,
      user,
      ready: () => httpOk(`${url}/_cluster/health?wait_for_status=yellow&timeout=1s`),
      readyTimeout: 180,
    },
    dir,
  );
  await proc.start();
  const get = async (path: string) => {
    const r = await fetch(url + path);
    if (!r.ok) throw new Error(`${kind} GET ${path}: ${r.status} ${await r.text()}`);
    return r.json();
  };
  return {
    kind,
    url,
    version: peer.version,
    async documents(pattern) {
      await fetch(`${url}/${pattern}/_refresh`, { method: 'POST' });
      const docs: Record<string, unknown>[] = [];
      type Page = { _scroll_id?: string; hits?: { hits?: { _source: Record<string, unknown>; _index: string }[] } };
      let body = (await get(`/${pattern}/_search?size=10000&scroll=1m&sort=_doc&ignore_unavailable=true&allow_no_indices=true`)) as Page;
      while (body.hits?.hits?.length) {
        for (const h of body.hits.hits) docs.push({ ...h._source, _index: h._index });
        const r = await fetch(`${url}/_search/scroll`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ scroll: '1m', scroll_id: body._scroll_id }),
        });
        body = (await r.json()) as Page;
      }
      return docs;
    },
    async indices(pattern) {
      const list = (await get(`/_cat/indices/${pattern}?format=json&expand_wildcards=open`)) as { index: string }[];
      return list.map((i) => i.index).sort();
    },
    async stop() {
      await proc.stop();
      proc.remove();
    },
    pause: () => proc.stop(),
    resume: () => proc.start(),
  };
}
