import type { App } from '../app.js';
import type { Deps } from '../context.js';

export function usersRoutes(app: App, deps: Deps): void {
  void app;
  void deps;
}
