import type { Command } from 'commander';
import { group, verb } from '../define.js';
import { MapTargets, type EnvironmentMapEntry, type MapTarget } from '../../api/index.js';
import { UsageError } from '../../errors.js';
import { printList, printObject } from '../../output/index.js';

export function registerEnv(program: Command): void {
  const env = group(program, {
    name: 'env',
    summary: 'Environments: list, map, intervals',
    examples: ['fleetctl env map', 'fleetctl env map uuid -o json'],
  });

  verb(
    env,
    {
      name: 'map',
      summary: 'Show the environments you can access, keyed by id, name or uuid',
      description: 'Show the environment map (id, name, uuid of each environment you can access). With -o json the\nobject is printed as the server returns it: keys are the chosen attribute.',
      examples: ['fleetctl env map', 'fleetctl env map uuid --json', "fleetctl env map name --jq '.prod.uuid'"],
    },
    (cmd) => cmd.argument('[target]', `key of the map: ${MapTargets.join(', ')}`, 'name'),
    async (ctx, [target = 'name']) => {
      if (!(MapTargets as readonly string[]).includes(target)) throw new UsageError(`invalid target "${target}"; valid: ${MapTargets.join(', ')}`);
      const api = await ctx.api();
      const map = await api.environments.map(target as MapTarget);
      const o = ctx.output();
      if (o.format === 'table' && o.jq === undefined) {
        const rows: EnvironmentMapEntry[] = Object.values(map).sort((a, b) => a.name.localeCompare(b.name));
        await printList(ctx.io, o, rows, [{ key: 'id', header: 'ID' }, { key: 'name', header: 'NAME' }, { key: 'uuid', header: 'UUID' }]);
      } else {
        await printObject(ctx.io, o, map);
      }
    },
  );
}
