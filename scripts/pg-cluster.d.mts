export interface Cluster {
  url: string;
  port: number;
  dir: string;
  /** A new empty database; returns its postgres:// URL. */
  createDatabase(name?: string): Promise<string>;
  stop(): void;
  /** Stops the server (fast shutdown) keeping its data and port: a real outage for fault tests. */
  pause(): void;
  /** Starts it again after pause(). */
  resume(): void;
}
export function postgresBinDir(): string | undefined;
export function startCluster(opts?: { port?: number; maxConnections?: number }): Promise<Cluster>;
export function createDatabaseAt(adminUrl: string, name?: string): Promise<string>;
