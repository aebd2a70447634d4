/**
 * The two roles an example child plays, on top of the adapter: a provider
 * with its driver, or a service. Entry files pick one and say which
 * implementation they build.
 *
 * @module
 */

import { UserInteractionService } from '../seam/service.js';
import { Screen, ScreenProvider } from '../seam/screen-provider.js';
import { ScreenDriver } from '../seam/screen-driver.js';
import { serveStdio } from './adapter.js';

/** The version of these examples, reported in the handshake. */
export const VERSION = '0.1.0';

/** What the screen provider's UI can do: everything (HAR-HELLO-1). */
export const SCREEN_CAPABILITIES = Object.freeze({
  can_skip: true,
  can_dismiss: true,
  custom_on_single: true,
  custom_on_multi: true,
  revises: true,
  concurrent: true,
  observes_screen: true,
});

/**
 * A fresh provider subject: a `ScreenProvider` (or a subclass) on its own
 * screen, with the driver for that screen.
 *
 * @param {typeof ScreenProvider} [Provider]
 */
export function screenSubject(Provider = ScreenProvider) {
  const screen = new Screen();
  const provider = new Provider(screen);
  const driver = new ScreenDriver(screen);
  return {
    provider,
    driver,
    name: Provider.name,
    leftovers() {
      const left = [];
      if (provider.pending > 0) left.push(`${provider.pending} ask(s) still pending in the provider`);
      if (screen.watcherCount > 0) left.push(`${screen.watcherCount} driver wait(s) still pending`);
      return left;
    },
  };
}

/**
 * Serve a provider with its driver on standard input and output.
 *
 * @param {{name: string, Provider?: typeof ScreenProvider}} options
 */
export function serveProvider({ name, Provider = ScreenProvider }) {
  return serveStdio({
    role: 'provider',
    implementation: { name, version: VERSION, language: `JavaScript (Node.js ${process.version})` },
    capabilities: SCREEN_CAPABILITIES,
    cancellable: true,
    create: () => screenSubject(Provider),
  });
}

/**
 * A fresh service subject.
 *
 * @param {() => UserInteractionService} [makeService]
 */
export function serviceSubject(makeService = () => new UserInteractionService()) {
  const service = makeService();
  return {
    service,
    name: service.constructor.name,
    leftovers() {
      const pending = service.pendingCount ?? 0;
      return pending > 0 ? [`${pending} ask(s) still pending in the service`] : [];
    },
  };
}

/**
 * Serve a service on standard input and output.
 *
 * @param {{name: string, makeService?: () => UserInteractionService}} options
 */
export function serveService({ name, makeService }) {
  return serveStdio({
    role: 'service',
    implementation: { name, version: VERSION, language: `JavaScript (Node.js ${process.version})` },
    cancellable: true,
    create: () => serviceSubject(makeService),
  });
}
