/** Every route of the management API. */
import { accessRoutes } from './resources/access.js';
import { bindingRoutes } from './resources/bindings.js';
import { connectionRoutes } from './resources/connections.js';
import { definitionRoutes } from './resources/definitions.js';
import { exchangeRoutes } from './resources/exchanges.js';
import { overviewRoutes } from './resources/overview.js';
import { queueRoutes } from './resources/queues.js';
import { shovelRoutes } from './resources/shovels.js';
import { userRoutes } from './resources/users.js';
import { Router } from './router.js';

export const apiRouter = new Router([
  ...overviewRoutes,
  ...queueRoutes,
  ...exchangeRoutes,
  ...bindingRoutes,
  ...connectionRoutes,
  ...userRoutes,
  ...accessRoutes,
  ...definitionRoutes,
  ...shovelRoutes,
]);
