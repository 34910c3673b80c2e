export interface InstalledPeer {
  home: string;
  version: string;
  bin?: string;
}
export function peersDir(): string;
export function readManifest(dir?: string): Record<string, InstalledPeer> | undefined;
export function installPeers(peers: unknown[], opts?: { announce?: (line: string) => void }): Record<string, InstalledPeer>;
