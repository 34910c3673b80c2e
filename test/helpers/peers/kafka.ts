// A real Apache Kafka (4.4.0, KRaft, one combined broker/controller node) from Maven Central's
// jars on the machine's JDK, for the kafka sink tests. Three client listeners: PLAINTEXT, SASL
// (PLAIN and SCRAM-SHA-256/512, user alice) and SSL (our private CA). The storage is formatted
// once per start (SCRAM credentials added there, as Kafka's own tools do); stop/start keep it.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PeerProcess, freePort, portOpen, requirePeer, tempDir } from './peer.js';
import { makeCa } from './tls.js';

export const KAFKA_USER = 'alice';
export const KAFKA_PASSWORD = 'alice-secret-1';

export interface Kafka {
  /** host:port of each listener. */
  plaintext: string;
  sasl: string;
  ssl: string;
  /** PEM of the CA the SSL listener's certificate is issued by. */
  ca: string;
  version: string;
  stop(): Promise<void>;
  /** An outage: the broker stopped by its PID, then started again on the same ports and data. */
  pause(): Promise<void>;
  resume(): Promise<void>;
}

function java(): string {
  return process.env.JAVA_HOME ? join(process.env.JAVA_HOME, 'bin', 'java') : 'java';
}

/** A cluster id Kafka accepts: 22 base64url characters, not starting with '-'. */
function clusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

export async function startKafka(): Promise<Kafka> {
  const peer = requirePeer('kafka');
  const dir = tempDir('kafka');
  const tls = makeCa(dir);
  // Kafka's PEM key store: the private key and the certificate chain in one file.
  writeFileSync(join(dir, 'keystore.pem'), readFileSync(tls.keyFile, 'utf8') + readFileSync(tls.certFile, 'utf8'));
  const [plain, sasl, ssl, controller] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const h = (p: number) => `127.0.0.1:${p}`;
  const props = `process.roles=broker,controller
node.id=1
controller.quorum.voters=1@${h(controller)}
listeners=PLAINTEXT://${h(plain)},SASL_PLAINTEXT://${h(sasl)},SSL://${h(ssl)},CONTROLLER://${h(controller)}
advertised.listeners=PLAINTEXT://${h(plain)},SASL_PLAINTEXT://${h(sasl)},SSL://${h(ssl)}
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_${KAFKA_USER}="${KAFKA_PASSWORD}";
listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
ssl.keystore.type=PEM
ssl.keystore.location=${join(dir, 'keystore.pem')}
log.dirs=${join(dir, 'data')}
num.partitions=1
auto.create.topics.enable=true
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
`;
  writeFileSync(join(dir, 'server.properties'), props);
  const cp = ['-cp', `${join(peer.home, 'libs')}/*`];
  execFileSync(
    java(),
    [
      '-Xmx128m',
      '-XX:TieredStopAtLevel=1',
      ...cp,
      'kafka.tools.StorageTool',
      'format',
      '-t',
      clusterId(),
      '-c',
      join(dir, 'server.properties'),
      '--add-scram',
      `SCRAM-SHA-256=[name=${KAFKA_USER},password=${KAFKA_PASSWORD}]`,
      '--add-scram',
      `SCRAM-SHA-512=[name=${KAFKA_USER},password=${KAFKA_PASSWORD}]`,
    ],
    { stdio: 'pipe' },
  );
  const proc = new PeerProcess(
    {
      name: 'kafka',
      cmd: java(),
      args: ['-Xms256m', '-Xmx512m', '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', ...cp, 'kafka.Kafka', join(dir, 'server.properties')],
      // The client listeners open once the broker has caught up with its metadata log.
      ready: async () => (await portOpen(plain)) && (await portOpen(sasl)) && (await portOpen(ssl)),
      readyTimeout: 120,
    },
    dir,
  );
  await proc.start();
  return {
    plaintext: h(plain),
    sasl: h(sasl),
    ssl: h(ssl),
    ca: tls.ca,
    version: peer.version,
    async stop() {
      await proc.stop();
      proc.remove();
    },
    pause: () => proc.stop(),
    resume: () => proc.start(),
  };
}
