// Dashboard statistics (4.20): authenticated; only the caller's environments are counted.
import { callerOf, type App } from './request.js';
import type { Deps } from '../context.js';
import { DashboardStats } from '../../api/index.js';
import { RULES } from '../permissions.js';
import { dashboardStats } from '../services/fleet/stats.js';

export function statsRoutes(app: App, deps: Deps): void {
  app.get('/api/v1/stats', { config: { rule: RULES.stats }, schema: { response: { 200: DashboardStats } } }, async (req) =>
    dashboardStats(deps, callerOf(req)),
  );
}
