import crypto from 'node:crypto';

const RATCHET_LABEL = Buffer.from('ratchet', 'utf8');

/** K(e+1) = HMAC(K(e), "ratchet" ‖ e), e as 8 bytes big-endian. One way: K(e+1) does not give K(e). */
export function nextEpochKey(key: Buffer, epoch: number): Buffer {
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(epoch));
  return crypto.createHmac('sha256', key).update(RATCHET_LABEL).update(counter).digest();
}

export interface EpochKeyMaterial {
  keyId: string;
  firstEpoch: number;
  startKey: string;
  lastEpoch: number | null;
}

/**
 * Epoch keys of one chain, derived forward from the earliest key the verifier holds (K0, or the
 * current epoch's key), remembered as they are derived.
 */
export class EpochKeys {
  private readonly derived: Buffer[] = [];

  constructor(
    readonly keyId: string,
    /** The epoch of `startKey`: 0 for a verification key K0. */
    readonly firstEpoch: number,
    startKey: Buffer,
    /** The highest epoch this chain has reached, when known: records claiming later epochs are out of range. */
    readonly lastEpoch: number | undefined,
  ) {
    this.derived.push(startKey);
  }

  has(epoch: number): boolean {
    return (
      Number.isSafeInteger(epoch) &&
      epoch >= this.firstEpoch &&
      (this.lastEpoch === undefined || epoch <= this.lastEpoch) &&
      epoch - this.firstEpoch < 10_000_000
    );
  }

  key(epoch: number): Buffer {
    if (!this.has(epoch)) throw new RangeError(`epoch ${epoch} is outside ${this.keyId}'s range`);
    const index = epoch - this.firstEpoch;
    while (this.derived.length <= index) {
      const last = this.derived.length - 1;
      this.derived.push(nextEpochKey(this.derived[last]!, this.firstEpoch + last));
    }
    return this.derived[index]!;
  }

  /** What a worker thread needs to rebuild these keys. */
  material(): EpochKeyMaterial {
    return {
      keyId: this.keyId,
      firstEpoch: this.firstEpoch,
      startKey: this.derived[0]!.toString('hex'),
      lastEpoch: this.lastEpoch ?? null,
    };
  }

  static fromMaterial(material: EpochKeyMaterial): EpochKeys {
    return new EpochKeys(material.keyId, material.firstEpoch, Buffer.from(material.startKey, 'hex'), material.lastEpoch ?? undefined);
  }

  /** Epochs derived so far, to look for the one a re-MACed record was really signed under. */
  knownEpochs(): number[] {
    return this.derived.map((_, index) => this.firstEpoch + index);
  }
}
