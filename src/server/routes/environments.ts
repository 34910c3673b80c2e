import { Type } from '@sinclair/typebox';
import { callerOf, envOf, type App } from './request.js';
import type { Deps } from '../context.js';
import { Environment, EnvironmentCreateBody, EnvironmentEditBody, IntervalsBody, MessageResponse } from '../../api/index.js';
import { RULES } from '../permissions.js';
import { environmentMap, readEnvironment, updateIntervals } from '../services/environments/environments.js';
import { createEnvironmentFor, deleteEnvironment, editEnvironment } from '../services/environments/environment-admin.js';

const EnvParam = Type.Object({ env: Type.String() });

export function environmentRoutes(app: App, deps: Deps): void {
  // find-my-way prefers the static `map` segment over `:env`, so `map/{target}` keeps working
  // beside `{env}`; an environment literally named "map" stays readable by its UUID.
  app.get(
    '/api/v1/environments/map/:target',
    { config: { rule: RULES.envMap }, schema: { params: Type.Object({ target: Type.String() }) } },
    async (req) => environmentMap(deps, callerOf(req), req.params.target),
  );
  app.get(
    '/api/v1/environments/:env',
    { config: { rule: RULES.envRead }, schema: { params: EnvParam, response: { 200: Environment } } },
    async (req) => readEnvironment(callerOf(req), envOf(req)),
  );
  // Issue 27: environments created, edited and deleted through the API (osctrl's paths).
  app.post(
    '/api/v1/environments',
    { config: { rule: RULES.envCreate }, schema: { body: EnvironmentCreateBody, response: { 200: Environment } } },
    async (req) => createEnvironmentFor(deps, callerOf(req), req.body, req.ip),
  );
  app.patch(
    '/api/v1/environments/:env',
    { config: { rule: RULES.envChange }, schema: { params: EnvParam, body: EnvironmentEditBody, response: { 200: Environment } } },
    async (req) => editEnvironment(deps, callerOf(req), envOf(req), req.body, req.ip),
  );
  app.delete(
    '/api/v1/environments/:env',
    { config: { rule: RULES.envChange }, schema: { params: EnvParam, response: { 200: MessageResponse } } },
    async (req) => ({ message: await deleteEnvironment(deps, callerOf(req), envOf(req), req.ip) }),
  );
  app.patch(
    '/api/v1/environments/intervals/:env',
    { config: { rule: RULES.intervals }, schema: { params: EnvParam, body: IntervalsBody, response: { 200: Environment } } },
    async (req) => updateIntervals(deps, callerOf(req), envOf(req), req.body, req.ip),
  );
}
