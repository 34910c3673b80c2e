// The contract in code: one source of truth for the client and the reference server.
export * from './common.js';
export * from './auth.js';
export * from './environment.js';
export * from './node.js';
export * from './tag.js';
export * from './user.js';
export * from './setting.js';
export * from './sink.js';
export * from './carve.js';
export * from './audit.js';
export * from './stats.js';
export * from './query.js';
export * from './osquery-config.js';
export * from './version.js';
export * from './logs.js';
