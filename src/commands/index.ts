// Every command group, in the order `fleetctl --help` lists them.
import type { Command } from 'commander';
import { registerLogin } from './login/index.js';
import { registerAuth } from './auth/index.js';
import { registerMfa } from './mfa/index.js';
import { registerUsers } from './users/index.js';
import { registerEnv } from './env/index.js';
import { registerEnroll } from './enroll/index.js';
import { registerTags } from './tags/index.js';
import { registerNodes } from './nodes/index.js';
import { registerSettings } from './settings/index.js';
import { registerCarves } from './carves/index.js';
import { registerQuery } from './query/index.js';
import { registerSinks } from './sinks/index.js';
import { registerAudit } from './audit/index.js';
import { registerStats } from './stats/index.js';
import { registerApi } from './api/index.js';
import { registerConfig } from './config/index.js';
import { registerVersion } from './version/index.js';
import { registerCompletion } from './completion/index.js';
import { registerServer } from './server/index.js';
import { registerDev } from './dev/index.js';
import { registerSchedule } from './schedule/index.js';
import { registerApply } from './apply/index.js';

export function registerCommands(program: Command): void {
  for (const register of [
    registerLogin, registerAuth, registerMfa, registerUsers, registerEnv, registerSchedule, registerEnroll, registerTags, registerNodes,
    registerSettings, registerQuery, registerCarves, registerSinks, registerAudit, registerStats, registerApply, registerApi, registerConfig,
    registerCompletion, registerVersion, registerServer, registerDev,
  ]) register(program);
}
