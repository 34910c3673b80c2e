// A server as a deployment runs it for real agents (no --dev): a SQLite file, environment prod,
// the agent door on a self-signed certificate for 127.0.0.1, and a CLI logged in as admin.
import { join } from 'node:path';
import { Cli, startServerProcess, type ServerProcess } from './cli.js';
import { selfSignedCert } from './pki.js';

export interface AgentDoorServer {
  server: ServerProcess;
  cli: Cli;
  /** The agent door's certificate: what agents are given as --tls_server_certs. */
  certFile: string;
}

export async function startAgentDoorServer(dir: string, password: string, extraArgs: string[] = []): Promise<AgentDoorServer> {
  const { certFile, keyFile } = selfSignedCert(dir, 'agent', ['127.0.0.1']);
  const db = ['--db', join(dir, 'fleet.db'), '--admin-password-stdin', '--create-env', 'prod'];
  const door = ['--agent-listen', '127.0.0.1:0', '--agent-tls-cert', certFile, '--agent-tls-key', keyFile];
  const server = await startServerProcess([...db, ...door, ...extraArgs], { input: password });
  const cli = new Cli();
  await cli.login(server.url, 'admin', 'prod', password);
  return { server, cli, certFile };
}
