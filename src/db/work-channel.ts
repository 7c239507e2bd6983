/**
 * The PostgreSQL NOTIFY channel that tells idle workers "there is work". Producers (the
 * enqueue statements, requeues, re-enabled endpoints) notify it; worker/work-listener.ts
 * listens on it.
 */
export const WORK_CHANNEL = "hookrelay_work";
