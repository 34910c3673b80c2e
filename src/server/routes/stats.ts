import type { App } from '../app.js';
import type { Deps } from '../context.js';

export function statsRoutes(app: App, deps: Deps): void {
  void app;
  void deps;
}
