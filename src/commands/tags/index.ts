import { reportChange } from '../report.js';
import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import { choiceOption, group, verb } from '../define.js';
import { HealthStatuses, NodeStatuses, Platforms, RiskLevels, TagTypes } from '../../api/constants.js';
import type { NodeStatus, Platform, TagBody, TagWithCount } from '../../api/index.js';
import { CliError, ExitCode, UsageError, mapError } from '../../errors.js';
import { printObject, type Column } from '../../output/index.js';
import { printPagedList } from '../paged-list.js';
import { Progress } from '../progress.js';
import { NODE_COLUMNS } from '../nodes/columns.js';
import { confirmDestructive } from '../confirm.js';
import type { Context } from '../../context.js';
import { nodesToChange, refsFromStdin } from './select-nodes.js';
import { printWholeList } from '../paged-list.js';

type TagTypeName = keyof typeof TagTypes;
const TAG_TYPE_NAMES = Object.keys(TagTypes) as TagTypeName[];

export function tagTypeName(t: number): string {
  return TAG_TYPE_NAMES.find((k) => TagTypes[k] === t) ?? String(t);
}

const TAG_COLUMNS: Column<TagWithCount>[] = [
  { key: 'name', header: 'NAME' },
  { key: 'description', header: 'DESCRIPTION' },
  { key: 'color', header: 'COLOR' },
  // tag_type stays the API's integer in json; tables show its name (custom: its text).
  {
    key: 'type',
    header: 'TYPE',
    get: (t) => (t.tag_type === TagTypes.custom && t.custom_tag ? `custom: ${t.custom_tag}` : tagTypeName(t.tag_type)),
  },
  { key: 'node_count', header: 'NODES', kind: 'number' },
];

/** Server batches: each POST is all-or-nothing; a batch this size stays a small request body. */
export const TAG_BATCH = 200;

function colorArg(v: string): string {
  if (!/^#[0-9a-fA-F]{6}$/.test(v)) throw new InvalidArgumentError('expected a color as #rrggbb');
  return v.toLowerCase();
}

interface TagFlags {
  description?: string;
  color?: string;
  icon?: string;
  type?: TagTypeName;
  custom?: string;
}

function tagFlags(cmd: Command): Command {
  return cmd
    .option('-d, --description <text>', 'description')
    .option('--color <#rrggbb>', 'color (random when a new tag has none)', colorArg)
    .option('--icon <class>', 'icon class (default for new tags: fas fa-tag)')
    .addOption(choiceOption('--type <type>', 'tag type (default for new tags: tag)', TAG_TYPE_NAMES))
    .option('--custom <text>', 'text of a custom tag type (implies --type custom)');
}

function tagBody(name: string, o: TagFlags): TagBody & { name: string } {
  if (o.custom !== undefined && o.type !== undefined && o.type !== 'custom')
    throw new UsageError(`--custom goes with --type custom, not --type ${o.type}`);
  const type = o.custom !== undefined ? 'custom' : o.type;
  const body: TagBody & { name: string } = { name };
  if (o.description !== undefined) body.description = o.description;
  if (o.color !== undefined) body.color = o.color;
  if (o.icon !== undefined) body.icon = o.icon;
  if (type !== undefined) body.tagtype = TagTypes[type];
  if (o.custom !== undefined) body.custom = o.custom;
  return body;
}

const report = (ctx: Context, human: string, data: Record<string, unknown>) => reportChange(ctx, human, () => data);

interface ApplyOpts {
  search?: string;
  status?: NodeStatus;
  platform?: Platform;
  risk?: string;
  health?: string;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

async function applyTag(ctx: Context, action: 'tag' | 'untag', tag: string, refs: string[], o: ApplyOpts): Promise<void> {
  const env = ctx.requireEnv();
  const api = await ctx.api();
  if (action === 'untag') api.need('untag');
  if (refs.includes('-')) {
    if (refs.length > 1) throw new UsageError('- (node names from stdin) cannot be mixed with names on the command line');
    refs = await refsFromStdin(ctx.io);
  }
  const uuids = await nodesToChange(api, env, refs, {
    search: o.search,
    status: o.status,
    platform: o.platform,
    risk: o.risk,
    health: o.health,
  });
  let done = 0;
  const progress = Progress.start(ctx.io, 'nodes', { verb: action === 'tag' ? 'Tagged' : 'Untagged', bulk: true });
  try {
    for (let i = 0; i < uuids.length; i += TAG_BATCH) {
      const batch = uuids.slice(i, i + TAG_BATCH);
      await (action === 'tag' ? api.tags.tag(env, tag, batch) : api.tags.untag(env, tag, batch));
      done += batch.length;
      progress.update(done, uuids.length);
    }
    progress.stop();
  } catch (e) {
    progress.stop();
    if (done === 0) throw e;
    // Earlier batches are applied and stay so: say exactly how far it got.
    const m = mapError(e);
    throw new CliError(
      `${m.message}; ${action === 'tag' ? 'tagged' : 'untagged'} ${done} of ${uuids.length} nodes before the error`,
      m.exitCode,
      m.hint,
    );
  }
  const verbText = action === 'tag' ? `Tagged ${plural(done, 'node')} with ${tag}` : `Removed tag ${tag} from ${plural(done, 'node')}`;
  await report(ctx, `${verbText} in ${env}`, { tag, env, action, count: done, uuids });
}

export function registerTags(program: Command): void {
  const tags = group(program, {
    name: 'tags',
    summary: 'List, create, change, remove and apply tags',
    examples: [
      'fleetctl tags list',
      'fleetctl tags show pci',
      'fleetctl tags add hipaa --description "In HIPAA scope" --color "#d9534f"',
      'fleetctl tags apply pci prod-web-0013 prod-db-0029',
      'fleetctl tags apply quarantine --status inactive --platform windows',
      'fleetctl tags remove quarantine --yes',
    ],
  });

  registerTagsListAndShow(tags);

  registerTagsAddEditRemove(tags);

  registerTagsApplyAndUnapply(tags);
}

function registerTagsListAndShow(tags: Command): void {
  verb(
    tags,
    {
      name: 'list',
      watch: true,
      aliases: ['ls'],
      summary: 'List the tags of an environment',
      description: "List every tag of the environment (--env or the profile's), by name, with how many nodes carry it.",
      examples: [
        'fleetctl tags list',
        'fleetctl tags list --env staging -o json',
        'fleetctl tags list --fields name,node_count --no-headers',
      ],
    },
    () => {},
    async (ctx) => {
      const api = await ctx.api();
      const list = await api.tags.list(ctx.requireEnv());
      await printWholeList(ctx, list, TAG_COLUMNS, `No tags in ${ctx.requireEnv()}`, (await import('../../api/index.js')).TagWithCount);
    },
  );

  verb(
    tags,
    {
      name: 'show',
      aliases: ['get'],
      summary: 'Show one tag and how many nodes carry it',
      description:
        "Show a tag of the environment (--env or the profile's) by name: description, color, type and its node count. -o json prints the API object.",
      examples: ['fleetctl tags show pci', 'fleetctl tags show pci -o json', 'fleetctl tags show pci --nodes --all'],
    },
    (cmd) =>
      cmd
        .argument('<name>', 'tag name')
        .option('--nodes', 'list the nodes carrying the tag instead (like nodes list --tag NAME)')
        .option('--all', 'with --nodes: every page'),
    async (ctx, [name], o: { nodes?: boolean; all?: boolean }) => {
      const env = ctx.requireEnv();
      const api = await ctx.api();
      if (o.nodes) api.need('node-tag-filter'); // refused before the tag is even read
      const tag = (await api.tags.list(env)).find((t) => t.name === name);
      if (!tag) throw new CliError(`no tag named "${name}" in ${env}`, ExitCode.notFound, 'run `fleetctl tags list` to see the tag names');
      if (!o.nodes) return printObject(ctx.io, ctx.output(), tag, ctx.wantsData() ? [] : TAG_COLUMNS);
      await printPagedList(
        ctx,
        { all: o.all },
        {
          noun: 'nodes',
          columns: NODE_COLUMNS,
          schema: (await import('../../api/index.js')).Node,
          fetchPage: (page, page_size) => api.nodes.list(env, { tag: name, page, page_size }),
          empty: `No nodes in ${env} carry ${name}`,
        },
      );
    },
  );
}

function registerTagsAddEditRemove(tags: Command): void {
  verb<TagFlags>(
    tags,
    {
      name: 'add',
      aliases: ['create'],
      summary: 'Create a tag',
      description: 'Create a tag in the environment. A tag with that name already there is a conflict (exit 6).',
      examples: [
        'fleetctl tags add hipaa --description "In HIPAA scope" --color "#d9534f"',
        'fleetctl tags add eu-west --custom "region eu-west" --icon "fas fa-globe"',
      ],
    },
    (cmd) => tagFlags(cmd.argument('<name>', 'tag name')),
    async (ctx, [name], o) => {
      const env = ctx.requireEnv();
      const api = await ctx.api();
      const r = await api.tags.add(env, tagBody(name, o));
      await report(ctx, `Created tag ${name} in ${env}`, { name, env, message: r.data });
    },
  );

  verb<TagFlags>(
    tags,
    {
      name: 'edit',
      aliases: ['update'],
      summary: 'Change a tag',
      description: 'Change the given fields of a tag; fields not given keep their value.',
      examples: ['fleetctl tags edit pci --color "#ff0000"', 'fleetctl tags edit laptops --description "Employee laptops" --type platform'],
    },
    (cmd) => tagFlags(cmd.argument('<name>', 'tag name')),
    async (ctx, [name], o) => {
      const body = tagBody(name, o);
      if (Object.keys(body).length === 1)
        throw new UsageError('nothing to change: pass --description, --color, --icon, --type or --custom');
      const env = ctx.requireEnv();
      const api = await ctx.api();
      const r = await api.tags.edit(env, body);
      await report(ctx, `Updated tag ${name} in ${env}`, { name, env, message: r.data });
    },
  );

  verb<{ yes?: boolean }>(
    tags,
    {
      name: 'remove',
      aliases: ['rm', 'delete'],
      summary: 'Delete a tag (and untag its nodes)',
      description: 'Delete a tag from the environment; the nodes that carry it lose it. Asks at a terminal; needs --yes otherwise.',
      examples: ['fleetctl tags remove quarantine', 'fleetctl tags remove old-tag --env staging --yes'],
    },
    (cmd) => cmd.argument('<name>', 'tag name').option('-y, --yes', 'do not ask for confirmation'),
    async (ctx, [name], o) => {
      const env = ctx.requireEnv();
      const api = await ctx.api();
      let question = `Delete tag ${name} from ${env}?`;
      if (!o.yes) {
        // The node count makes the question concrete; an unknown tag fails below, with the server's 404.
        const found = (await api.tags.list(env)).find((t) => t.name === name);
        if (found && found.node_count > 0) question = `Delete tag ${name} from ${env} and untag its ${plural(found.node_count, 'node')}?`;
      }
      await confirmDestructive(ctx, o.yes, question);
      const r = await api.tags.remove(env, name);
      await report(ctx, `Deleted tag ${name} from ${env}`, { name, env, message: r.data });
    },
  );
}

function registerTagsApplyAndUnapply(tags: Command): void {
  const selection = (cmd: Command) =>
    cmd
      .option('-q, --search <text>', 'select the nodes matching this text (as `nodes list -q`)')
      .addOption(choiceOption('--status <status>', 'select nodes by status', NodeStatuses))
      .addOption(choiceOption('--platform <platform>', 'select nodes by platform family', Platforms))
      .addOption(choiceOption('--risk <level>', 'select nodes by posture.risk_level (as nodes list --risk)', RiskLevels))
      .addOption(choiceOption('--health <status>', 'select nodes by health.status (as nodes list --health)', HealthStatuses));

  verb<ApplyOpts>(
    tags,
    {
      name: 'apply',
      summary: 'Tag nodes',
      description:
        'Tag nodes named by UUID, hostname or local name (- reads them from stdin, one or more a line), or every\n' +
        'node matching --search/--status/--platform/--risk/--health (the filters combine: a node must match all).\n' +
        'Names are resolved first: an unknown or ambiguous name fails the command and nothing is tagged.\n' +
        `Nodes are sent in batches of ${TAG_BATCH}; each batch is applied whole or not at all.`,
      examples: [
        'fleetctl tags apply pci prod-web-0013 prod-db-0029',
        'fleetctl tags apply laptops --platform darwin',
        'fleetctl tags apply quarantine --risk high',
        "fleetctl nodes list --health unhealthy --all -o json --jq '.[].uuid' | fleetctl tags apply review -",
        'fleetctl tags apply quarantine -q 10.1.0. --status inactive -o json',
      ],
    },
    (cmd) =>
      selection(cmd.argument('<tag>', 'tag name').argument('[nodes...]', 'node UUIDs, hostnames or local names; - reads them from stdin')),
    async (ctx, [tag, ...refs], o) => applyTag(ctx, 'tag', tag, refs, o),
  );

  verb<ApplyOpts>(
    tags,
    {
      name: 'unapply',
      aliases: ['untag'],
      summary: 'Remove a tag from nodes',
      description: 'The reverse of `tags apply`: same ways to name or select nodes, same all-or-nothing name resolution.',
      examples: ['fleetctl tags unapply quarantine prod-web-0013', 'fleetctl tags unapply quarantine --status active'],
    },
    (cmd) =>
      selection(cmd.argument('<tag>', 'tag name').argument('[nodes...]', 'node UUIDs, hostnames or local names; - reads them from stdin')),
    async (ctx, [tag, ...refs], o) => applyTag(ctx, 'untag', tag, refs, o),
  );
}
