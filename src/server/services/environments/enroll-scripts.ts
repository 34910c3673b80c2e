// The texts behind 4.9: osquery flags files and the install/remove scripts of an environment.
// Pure functions of the environment row, so they are easy to test and never touch the store.
// The layout follows osctrl (same flags, same per-OS file locations), so nodes enrolled by
// either tool look alike.
import { NEVER } from '../../../api/index.js';
import type { EnvironmentRow } from '../../store/schema.js';

export type FlagsOs = 'linux' | 'darwin' | 'windows' | 'freebsd';

/** Where osquery keeps the enroll secret, the server certificate and its flags on each OS. */
export const OS_PATHS: Record<FlagsOs, { secret: string; cert: string; flags: string }> = {
  linux: { secret: '/etc/osquery/fleetctl.secret', cert: '/etc/osquery/certs/fleetctl.crt', flags: '/etc/osquery/osquery.flags' },
  darwin: {
    secret: '/private/var/osquery/fleetctl.secret',
    cert: '/private/var/osquery/certs/fleetctl.crt',
    flags: '/private/var/osquery/osquery.flags',
  },
  windows: {
    secret: 'C:\\Program Files\\osquery\\fleetctl.secret',
    cert: 'C:\\Program Files\\osquery\\certs\\fleetctl.crt',
    flags: 'C:\\Program Files\\osquery\\osquery.flags',
  },
  freebsd: { secret: '/usr/local/etc/fleetctl.secret', cert: '/usr/local/etc/certs/fleetctl.crt', flags: '/usr/local/etc/osquery.flags' },
};

/** osctrl's placeholders in the generic flags, replaced by the scripts with the OS paths. */
export const SECRET_PLACEHOLDER = '__SECRET_FILE__';
export const CERT_PLACEHOLDER = '__CERT_FILE__';

/** Carve blocks of 5 MB, as osctrl. */
const CARVER_BLOCK_SIZE = 5_120_000;

/** Values land in single-line places (flag lines, comments): a stray newline must not start a new line. */
const one = (s: string | number) => String(s).replace(/[\r\n]+/g, ' ');
/** osctrl's layout, served by the agent door: /{env uuid}/{the environment's path}. */
const endpointOf = (env: EnvironmentRow) => (path: string) => `/${one(env.uuid)}/${one(path).replace(/^\/+/, '')}`;

/**
 * An osquery flags file for the environment. Plugins are included only when the environment
 * enables them over TLS (config_tls, logging_tls, query_tls, carves_tls); --tls_server_certs
 * only when the environment has a certificate.
 */
export function flagsFile(env: EnvironmentRow, paths: { secret: string; cert: string }): string {
  const endpoint = endpointOf(env);
  const lines = [
    '--host_identifier=uuid',
    '--force=true',
    '--utc=true',
    `--enroll_secret_path=${one(paths.secret)}`,
    `--enroll_tls_endpoint=${endpoint(env.enroll_path)}`,
  ];
  if (env.config_tls) {
    lines.push(
      '--config_plugin=tls',
      `--config_tls_endpoint=${endpoint(env.config_path)}`,
      `--config_tls_refresh=${env.config_interval}`,
      '--config_tls_max_attempts=5',
    );
  }
  if (env.logging_tls) {
    lines.push(
      '--logger_plugin=tls',
      '--logger_tls_compress=true',
      `--logger_tls_endpoint=${endpoint(env.log_path)}`,
      `--logger_tls_period=${env.log_interval}`,
    );
  }
  if (env.query_tls) {
    lines.push(
      '--disable_distributed=false',
      '--distributed_plugin=tls',
      `--distributed_interval=${env.query_interval}`,
      '--distributed_tls_max_attempts=5',
      `--distributed_tls_read_endpoint=${endpoint(env.query_read_path)}`,
      `--distributed_tls_write_endpoint=${endpoint(env.query_write_path)}`,
    );
  }
  if (env.carves_tls) {
    lines.push(
      '--disable_carver=false',
      '--carver_disable_function=false',
      `--carver_start_endpoint=${endpoint(env.carver_init_path)}`,
      `--carver_continue_endpoint=${endpoint(env.carver_block_path)}`,
      `--carver_block_size=${CARVER_BLOCK_SIZE}`,
    );
  }
  lines.push(`--tls_hostname=${one(env.hostname)}`);
  if (env.certificate.trim() !== '') lines.push(`--tls_server_certs=${one(paths.cert)}`);
  return lines.join('\n') + '\n';
}

/** The environment's generic flags: its stored flags, else the template with osctrl's placeholders. */
export function genericFlags(env: EnvironmentRow): string {
  return env.flags !== '' ? env.flags : flagsFile(env, { secret: SECRET_PLACEHOLDER, cert: CERT_PLACEHOLDER });
}

export const osFlags = (env: EnvironmentRow, os: FlagsOs) => flagsFile(env, OS_PATHS[os]);

/** True when an expiry timestamp has passed ("never" never passes). */
export function hasExpired(expire: string, now: Date): boolean {
  if (expire === '' || expire === NEVER || expire.startsWith('0001-01-01')) return false;
  const t = Date.parse(expire);
  return Number.isFinite(t) && t <= now.getTime();
}

export interface ScriptOptions {
  now: Date;
  /** Setting tls/oneliner_expiration: when false, scripts ignore the expiry. */
  expires: boolean;
}

type ScriptKind = 'enroll' | 'remove';

/** POSIX shell single quoting: safe for any text, including quotes and `$`. */
export const shQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
/** PowerShell single-quoted string: only `'` is special, doubled. */
export const psQuote = (s: string) => `'${s.replace(/'/g, "''")}'`;

/** Header comment lines shared by the sh and ps1 scripts. */
function header(env: EnvironmentRow, kind: ScriptKind, ext: 'sh' | 'ps1', opts: ScriptOptions): string[] {
  const secretPath = kind === 'enroll' ? env.enroll_secret_path : env.remove_secret_path;
  const expire = kind === 'enroll' ? env.enroll_expire : env.remove_expire;
  const url = one(`https://${env.hostname}/${env.uuid}/${secretPath}/${kind}.${ext}`);
  const name = one(env.name);
  // -f: an HTTP error is a failure, not a page piped to sh; -S: curl says why it failed (an
  // untrusted certificate) instead of piping nothing to sh silently (issue 26).
  const oneLiner =
    ext === 'sh'
      ? `curl -fsS ${url} | sh`
      : `Set-ExecutionPolicy Bypass -Scope Process -Force; iex ((New-Object System.Net.WebClient).DownloadString('${url}'))`;
  const lines = [
    `# fleetctl ${kind} script for environment ${name} (${one(env.uuid)}), server ${one(env.hostname)}`,
    `# One-liner (where the environment's TLS service serves this script): ${oneLiner}`,
  ];
  if (ext === 'sh' && env.certificate.trim() !== '') {
    // A host that does not trust the listener's certificate yet (a private CA): trust it for this download.
    lines.push(
      `# Where this host does not trust the listener's certificate yet: save it (fleetctl enroll show ${one(env.name)} cert > fleetctl.crt), then: curl -fsS --cacert fleetctl.crt ${url} | sh`,
    );
  }
  if (opts.expires && hasExpired(expire, opts.now)) {
    lines.push(
      kind === 'enroll'
        ? `# EXPIRED: the enrollment of environment ${name} expired at ${one(expire)}; the server refuses new nodes until an env admin extends it (fleetctl enroll extend ${name}).`
        : `# EXPIRED: the remove link of environment ${name} expired at ${one(expire)}.`,
    );
  } else if (expire !== NEVER && expire !== '') {
    lines.push(`# Valid until ${one(expire)}.`);
  }
  return lines;
}

/**
 * The start both sh scripts share: which environment, log/fail helpers, sudo when not root, and
 * the per-OS paths of the secret, certificate and flags files.
 */
function shPrelude(env: EnvironmentRow, script: 'enroll' | 'remove', vars: string[]): string[] {
  const L = OS_PATHS.linux;
  const M = OS_PATHS.darwin;
  const F = OS_PATHS.freebsd;
  return [
    `ENV_NAME=${shQuote(env.name)}`,
    `ENV_UUID=${shQuote(env.uuid)}`,
    `TLS_HOSTNAME=${shQuote(env.hostname)}`,
    ...vars,
    '',
    'log() { printf \'[+] %s\\n\' "$1"; }',
    'fail() { printf \'[!] %s\\n\' "$1" >&2; exit 1; }',
    'SUDO=""',
    'if [ "$(id -u)" != "0" ]; then',
    '  command -v sudo >/dev/null 2>&1 || fail "run this script as root"',
    '  SUDO="sudo"',
    'fi',
    '',
    'OS=$(uname -s | tr "[:upper:]" "[:lower:]")',
    'case "$OS" in',
    `  linux) SECRET_FILE=${shQuote(L.secret)}; CERT_FILE=${shQuote(L.cert)}; FLAGS_FILE=${shQuote(L.flags)} ;;`,
    `  darwin) SECRET_FILE=${shQuote(M.secret)}; CERT_FILE=${shQuote(M.cert)}; FLAGS_FILE=${shQuote(M.flags)} ;;`,
    `  freebsd) SECRET_FILE=${shQuote(F.secret)}; CERT_FILE=${shQuote(F.cert)}; FLAGS_FILE=${shQuote(F.flags)} ;;`,
    `  *) fail "unsupported OS: $OS (use ${script}.ps1 on Windows)" ;;`,
    'esac',
  ];
}

/** Shell enroll script: installs osquery when missing, writes secret, certificate and flags, (re)starts osqueryd. */
export function enrollSh(env: EnvironmentRow, opts: ScriptOptions): string {
  const flags = flagsFile(env, { secret: SECRET_PLACEHOLDER, cert: CERT_PLACEHOLDER });
  const cert = env.certificate.trim();
  return [
    '#!/bin/sh',
    ...header(env, 'enroll', 'sh', opts),
    '# Run as root (or with sudo available). TRACE=1 shows every command.',
    'set -eu',
    '[ "${TRACE:-0}" = "1" ] && set -x',
    '',
    ...shPrelude(env, 'enroll', [
      `ENROLL_SECRET=${shQuote(env.secret)}`,
      `PKG_DEB=${shQuote(env.deb_package)}`,
      `PKG_RPM=${shQuote(env.rpm_package)}`,
      `PKG_MAC=${shQuote(env.pkg_package)}`,
      `HAS_CERT=${cert ? 1 : 0}`,
    ]),
    'log "enrolling this $OS node in $ENV_NAME ($ENV_UUID) at $TLS_HOSTNAME"',
    '',
    '# A package is an https:// URL (downloaded) or a bare file name (expected next to this script).',
    'fetch_pkg() {',
    '  case "$1" in',
    '    https://*|HTTPS://*) _out="/tmp/$(basename "$1")"; curl -fsSL "$1" -o "$_out" || fail "download failed: $1"; echo "$_out" ;;',
    '    *) [ -f "./$1" ] || fail "package $1 not found: copy it into $(pwd) and run this script again"; echo "./$1" ;;',
    '  esac',
    '}',
    'no_pkg() {',
    '  fail "osquery is not installed and environment $ENV_NAME has no $1 package; install osquery (https://osquery.io/downloads) or ask an env admin to set one (fleetctl enroll update), then run this script again"',
    '}',
    'install_osquery() {',
    '  case "$OS" in',
    '    linux)',
    '      if command -v dpkg >/dev/null 2>&1; then',
    '        [ -n "$PKG_DEB" ] || no_pkg deb',
    '        _pkg=$(fetch_pkg "$PKG_DEB"); $SUDO dpkg -i "$_pkg"',
    '      elif command -v rpm >/dev/null 2>&1; then',
    '        [ -n "$PKG_RPM" ] || no_pkg rpm',
    '        _pkg=$(fetch_pkg "$PKG_RPM"); $SUDO rpm -Uvh "$_pkg"',
    '      else',
    '        fail "neither dpkg nor rpm found: install osquery (https://osquery.io/downloads), then run this script again"',
    '      fi ;;',
    '    darwin)',
    '      [ -n "$PKG_MAC" ] || no_pkg pkg',
    '      _pkg=$(fetch_pkg "$PKG_MAC"); $SUDO installer -pkg "$_pkg" -target / ;;',
    '    freebsd) $SUDO env ASSUME_ALWAYS_YES=YES pkg install osquery ;;',
    '  esac',
    '}',
    'if command -v osqueryd >/dev/null 2>&1 || [ -x /opt/osquery/bin/osqueryd ] || [ -x /usr/local/bin/osqueryd ]; then',
    '  log "osquery is installed"',
    'else',
    '  log "installing osquery"',
    '  install_osquery',
    'fi',
    '',
    'log "writing $SECRET_FILE"',
    '$SUDO mkdir -p "$(dirname "$SECRET_FILE")" "$(dirname "$CERT_FILE")"',
    'printf \'%s\\n\' "$ENROLL_SECRET" | $SUDO tee "$SECRET_FILE" >/dev/null',
    '$SUDO chmod 600 "$SECRET_FILE"',
    'if [ "$HAS_CERT" = "1" ]; then',
    '  log "writing $CERT_FILE"',
    `  $SUDO tee "$CERT_FILE" >/dev/null <<'FLEETCTL_CERT_EOF'`,
    ...(cert ? cert.split(/\r?\n/) : []),
    'FLEETCTL_CERT_EOF',
    'fi',
    'log "writing $FLAGS_FILE"',
    `sed -e "s@${SECRET_PLACEHOLDER}@$SECRET_FILE@g" -e "s@${CERT_PLACEHOLDER}@$CERT_FILE@g" <<'FLEETCTL_FLAGS_EOF' | $SUDO tee "$FLAGS_FILE" >/dev/null`,
    ...flags.trimEnd().split('\n'),
    'FLEETCTL_FLAGS_EOF',
    '',
    'log "starting osqueryd"',
    'case "$OS" in',
    '  linux)',
    '    if command -v systemctl >/dev/null 2>&1; then',
    '      $SUDO systemctl enable osqueryd && $SUDO systemctl restart osqueryd',
    '    else',
    '      $SUDO service osqueryd restart',
    '    fi ;;',
    '  darwin)',
    '    $SUDO cp /private/var/osquery/io.osquery.agent.plist /Library/LaunchDaemons/io.osquery.agent.plist',
    '    $SUDO launchctl unload /Library/LaunchDaemons/io.osquery.agent.plist >/dev/null 2>&1 || true',
    '    $SUDO launchctl load /Library/LaunchDaemons/io.osquery.agent.plist ;;',
    '  freebsd)',
    '    $SUDO sysrc osqueryd_enable=YES >/dev/null',
    '    $SUDO service osqueryd restart ;;',
    'esac',
    'log "done: this node enrolls in $ENV_NAME at its next check-in"',
    '',
  ].join('\n');
}

/** Shell remove script: stops osqueryd and deletes what enroll.sh wrote; osquery stays installed. */
export function removeSh(env: EnvironmentRow, opts: ScriptOptions): string {
  return [
    '#!/bin/sh',
    ...header(env, 'remove', 'sh', opts),
    '# Run as root (or with sudo available).',
    'set -eu',
    '',
    ...shPrelude(env, 'remove', []),
    'log "removing this $OS node from $ENV_NAME ($ENV_UUID) at $TLS_HOSTNAME"',
    'case "$OS" in',
    '  linux)',
    '    if command -v systemctl >/dev/null 2>&1; then',
    '      $SUDO systemctl stop osqueryd || true',
    '      $SUDO systemctl disable osqueryd || true',
    '    else',
    '      $SUDO service osqueryd stop || true',
    '    fi ;;',
    '  darwin) $SUDO launchctl unload /Library/LaunchDaemons/io.osquery.agent.plist >/dev/null 2>&1 || true ;;',
    '  freebsd)',
    '    $SUDO service osqueryd stop || true',
    '    $SUDO sysrc osqueryd_enable=NO >/dev/null || true ;;',
    'esac',
    '$SUDO rm -f "$SECRET_FILE" "$CERT_FILE" "$FLAGS_FILE"',
    'log "done: osqueryd stopped and its enrollment files removed; osquery itself is still installed"',
    '',
  ].join('\n');
}

/** PowerShell enroll script for Windows. */
export function enrollPs1(env: EnvironmentRow, opts: ScriptOptions): string {
  const W = OS_PATHS.windows;
  const flags = flagsFile(env, W);
  const cert = env.certificate.trim();
  return [
    ...header(env, 'enroll', 'ps1', opts),
    '#Requires -RunAsAdministrator',
    "$ErrorActionPreference = 'Stop'",
    '[System.Net.ServicePointManager]::SecurityProtocol = [System.Net.SecurityProtocolType]::Tls12',
    '',
    `$envName = ${psQuote(env.name)}`,
    `$envUuid = ${psQuote(env.uuid)}`,
    `$tlsHostname = ${psQuote(env.hostname)}`,
    `$enrollSecret = ${psQuote(env.secret)}`,
    `$msiPackage = ${psQuote(env.msi_package)}`,
    `$secretFile = ${psQuote(W.secret)}`,
    `$certFile = ${psQuote(W.cert)}`,
    `$flagsFile = ${psQuote(W.flags)}`,
    "$osqueryDir = Join-Path $env:ProgramFiles 'osquery'",
    "$osqueryd = Join-Path $osqueryDir 'osqueryd\\osqueryd.exe'",
    "$flags = @'",
    ...flags.trimEnd().split('\n'),
    "'@",
    "$certificate = @'",
    ...(cert ? cert.split(/\r?\n/) : []),
    "'@",
    '',
    'Write-Host "[+] enrolling this node in $envName ($envUuid) at $tlsHostname"',
    'if (-not (Test-Path $osqueryd)) {',
    "  if ($msiPackage -eq '') {",
    '    throw "osquery is not installed and environment $envName has no msi package; install osquery (https://osquery.io/downloads) or ask an env admin to set one (fleetctl enroll update), then run this script again"',
    '  }',
    "  if ($msiPackage -match '^https://') {",
    '    $msi = Join-Path $env:TEMP ([System.IO.Path]::GetFileName(([uri]$msiPackage).AbsolutePath))',
    '    Write-Host "[+] downloading $msiPackage"',
    '    Invoke-WebRequest -Uri $msiPackage -OutFile $msi -UseBasicParsing',
    '  } else {',
    '    $msi = Join-Path (Get-Location) $msiPackage',
    '    if (-not (Test-Path $msi)) { throw "package $msiPackage not found: copy it into $(Get-Location) and run this script again" }',
    '  }',
    '  Write-Host "[+] installing osquery"',
    "  Start-Process msiexec.exe -ArgumentList @('/i', \"`\"$msi`\"\", '/qn', '/norestart') -Wait",
    '}',
    '',
    'New-Item -ItemType Directory -Force -Path (Split-Path $certFile) | Out-Null',
    'Write-Host "[+] writing $secretFile"',
    'Set-Content -Path $secretFile -Value $enrollSecret -Encoding ASCII -NoNewline',
    "if ($certificate -ne '') {",
    '  Write-Host "[+] writing $certFile"',
    '  Set-Content -Path $certFile -Value $certificate -Encoding ASCII',
    '}',
    'Write-Host "[+] writing $flagsFile"',
    'Set-Content -Path $flagsFile -Value $flags -Encoding ASCII',
    '',
    "$service = Get-Service -Name 'osqueryd' -ErrorAction SilentlyContinue",
    'if ($service) {',
    "  Restart-Service -Name 'osqueryd'",
    '} else {',
    '  & $osqueryd --install --flagfile $flagsFile',
    "  Start-Service -Name 'osqueryd'",
    '}',
    'Write-Host "[+] done: this node enrolls in $envName at its next check-in"',
    '',
  ].join('\r\n');
}

/** PowerShell remove script: stops and unregisters osqueryd, deletes the enrollment files. */
export function removePs1(env: EnvironmentRow, opts: ScriptOptions): string {
  const W = OS_PATHS.windows;
  return [
    ...header(env, 'remove', 'ps1', opts),
    '#Requires -RunAsAdministrator',
    "$ErrorActionPreference = 'Stop'",
    '',
    `$envName = ${psQuote(env.name)}`,
    `$envUuid = ${psQuote(env.uuid)}`,
    `$secretFile = ${psQuote(W.secret)}`,
    `$certFile = ${psQuote(W.cert)}`,
    `$flagsFile = ${psQuote(W.flags)}`,
    "$osqueryd = Join-Path (Join-Path $env:ProgramFiles 'osquery') 'osqueryd\\osqueryd.exe'",
    '',
    'Write-Host "[+] removing this node from $envName ($envUuid)"',
    "$service = Get-Service -Name 'osqueryd' -ErrorAction SilentlyContinue",
    'if ($service) {',
    "  Stop-Service -Name 'osqueryd' -Force",
    '  if (Test-Path $osqueryd) { & $osqueryd --uninstall }',
    '}',
    'foreach ($f in @($secretFile, $certFile, $flagsFile)) {',
    '  if (Test-Path $f) { Remove-Item -Force $f }',
    '}',
    'Write-Host "[+] done: osqueryd stopped and its enrollment files removed; osquery itself is still installed"',
    '',
  ].join('\r\n');
}

/** The text of one 4.9 target (validated by the caller). */
export function enrollText(env: EnvironmentRow, target: string, opts: ScriptOptions): string {
  switch (target) {
    case 'secret':
      return env.secret;
    case 'cert':
      return env.certificate;
    case 'flags':
      return genericFlags(env);
    case 'flagsLinux':
      return osFlags(env, 'linux');
    case 'flagsMac':
      return osFlags(env, 'darwin');
    case 'flagsWindows':
      return osFlags(env, 'windows');
    case 'flagsFreeBSD':
      return osFlags(env, 'freebsd');
    case 'enroll.sh':
      return enrollSh(env, opts);
    case 'enroll.ps1':
      return enrollPs1(env, opts);
    case 'remove.sh':
      return removeSh(env, opts);
    case 'remove.ps1':
      return removePs1(env, opts);
  }
  throw new Error(`unhandled enroll target ${target}`);
}
