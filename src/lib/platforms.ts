// Which platform bucket (linux, darwin, windows, other) an osquery platform name belongs to: the
// server's derived node field and the CLI's platform targets on servers that match exact names.
import type { Platforms } from '../api/constants.js';

type Platform = (typeof Platforms)[number];

const BUCKETS: Record<Exclude<Platform, 'other'>, string[]> = {
  linux: [
    'linux',
    'ubuntu',
    'debian',
    'centos',
    'rhel',
    'fedora',
    'arch',
    'amzn',
    'amazon',
    'opensuse',
    'sles',
    'alpine',
    'rocky',
    'oracle',
    'almalinux',
    'kali',
  ],
  darwin: ['darwin', 'macos', 'mac'],
  windows: ['windows', 'win', 'win32', 'win64'],
};

export function platformBucket(platform: string): Platform {
  const p = platform.trim().toLowerCase();
  for (const [bucket, names] of Object.entries(BUCKETS)) if (names.includes(p)) return bucket as Platform;
  return 'other';
}
