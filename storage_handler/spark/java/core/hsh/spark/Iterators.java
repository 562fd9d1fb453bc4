package hsh.spark;

import java.util.Collections;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.function.Function;
import java.util.function.Predicate;

/** Lazy Java iterators for the driver's answers ({@link IndexAnswer}): one row at a time, as Spark's own
 *  operators pass them, so a reader's reused row is consumed before the next one overwrites it. */
final class Iterators {
  private Iterators() {}

  static <A, B> Iterator<B> map(Iterator<A> in, Function<A, B> f) {
    return new Iterator<B>() {
      @Override
      public boolean hasNext() {
        return in.hasNext();
      }

      @Override
      public B next() {
        return f.apply(in.next());
      }
    };
  }

  static <A> Iterator<A> filter(Iterator<A> in, Predicate<A> keep) {
    return new Iterator<A>() {
      private A next;

      @Override
      public boolean hasNext() {
        while (next == null && in.hasNext()) {
          A candidate = in.next();
          if (keep.test(candidate)) next = candidate;
        }
        return next != null;
      }

      @Override
      public A next() {
        if (!hasNext()) throw new NoSuchElementException();
        A out = next;
        next = null;
        return out;
      }
    };
  }

  static <A> Iterator<A> concat(Iterator<Iterator<A>> parts) {
    return new Iterator<A>() {
      private Iterator<A> current = Collections.emptyIterator();

      @Override
      public boolean hasNext() {
        while (!current.hasNext() && parts.hasNext()) current = parts.next();
        return current.hasNext();
      }

      @Override
      public A next() {
        if (!hasNext()) throw new NoSuchElementException();
        return current.next();
      }
    };
  }

  /** A Scala iterator as a Java one, {@code onEach} told of every element. */
  static <A> Iterator<A> of(scala.collection.Iterator<A> in, Runnable onEach) {
    return new Iterator<A>() {
      @Override
      public boolean hasNext() {
        return in.hasNext();
      }

      @Override
      public A next() {
        onEach.run();
        return in.next();
      }
    };
  }
}
